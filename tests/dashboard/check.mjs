// Loads sluice's dashboard in headless Chromium and checks it the way a person would:
// the page loads without console errors, shows a non-zero "events out /s" while a generator
// runs, and draws its charts; then saves a screenshot.
//
//   node check.mjs URL SCREENSHOT.png [USER_DATA_DIR]
//
// Prints one JSON line with what it saw; exits 1 when a check fails.
import { chromium } from 'playwright-core';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [url, screenshot, userDataArg] = process.argv.slice(2);
if (!url || !screenshot) {
  console.error('usage: node check.mjs URL SCREENSHOT.png [USER_DATA_DIR]');
  process.exit(2);
}
const userDataDir = userDataArg || mkdtempSync(join(tmpdir(), 'sluice-chromium-'));
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

const result = { consoleErrors: [], pageErrors: [], failedRequests: [] };
// Whatever happens, never hang the test: give up after 60 s.
const watchdog = setTimeout(() => {
  console.log(JSON.stringify({ ...result, ok: false, error: 'timed out' }));
  process.exit(1);
}, 60000);

const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath,
  headless: true,
  // A laptop screen by default; VIEWPORT=WIDTHxHEIGHT for another.
  viewport: (() => {
    const [width, height] = (process.env.VIEWPORT || '1440x900').split('x').map(Number);
    return { width, height };
  })(),
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
let ok = false;
try {
  const page = context.pages()[0] || (await context.newPage());
  page.on('console', (m) => {
    if (m.type() === 'error') result.consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => result.pageErrors.push(String(e)));
  // A tap's stream the page closes itself ends as an aborted request: not a failure.
  page.on('requestfailed', (r) => {
    const aborted = /ABORTED/.test((r.failure() && r.failure().errorText) || '');
    if (!(aborted && new URL(r.url()).pathname === '/_node/tap')) result.failedRequests.push(r.url());
  });
  page.on('response', (r) => {
    if (r.status() >= 400) result.failedRequests.push(r.status() + ' ' + r.url());
  });
  await page.goto(url, { waitUntil: 'load', timeout: 20000 });
  // A rate needs two polls one second apart.
  await page.waitForFunction(
    () => Number(document.getElementById('t-out').dataset.value) > 0,
    null,
    { timeout: 20000, polling: 250 },
  );
  // Let the charts gather a few seconds of history before the picture.
  await page.waitForTimeout(4000);
  const seen = await page.evaluate(() => {
    const text = (id) => document.getElementById(id).textContent;
    const value = (id) => Number(document.getElementById(id).dataset.value);
    // A chart has drawn something when its canvas has non-transparent pixels.
    const painted = (id) => {
      const c = document.getElementById(id);
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
      return n;
    };
    return {
      outText: text('t-out'),
      outRate: value('t-out'),
      inRate: value('t-in'),
      tabs: [...document.querySelectorAll('#pipelines button')].map((b) => b.textContent),
      shareRows: document.querySelectorAll('#share .row').length,
      ratePixels: painted('chart-rate'),
      status: text('status'),
      scrollHeight: document.documentElement.scrollHeight,
      innerHeight: window.innerHeight,
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
    };
  });
  Object.assign(result, seen);
  await page.screenshot({ path: screenshot });
  // The tap pane (TAP_PLUGIN=pipeline/id): a click on the plugin's row streams its events.
  if (process.env.TAP_PLUGIN) {
    await page.locator(`#plugins tr[data-tap="${process.env.TAP_PLUGIN}"]`).first().click();
    await page.waitForFunction(() => document.querySelectorAll('#tap-events .ev').length >= 3, null, { timeout: 15000, polling: 250 });
    result.tap = await page.evaluate(() => ({
      title: document.getElementById('tap-title').textContent,
      status: document.getElementById('tap-status').textContent,
      events: [...document.querySelectorAll('#tap-events .ev')].slice(0, 3).map((e) => e.textContent),
    }));
    await page.screenshot({ path: screenshot.replace(/\.png$/, '-tap.png') });
    await page.click('#tap-close');
    result.tapClosed = await page.evaluate(() => document.getElementById('tap').hidden);
  }
  // One pipeline's page: its details, with its outputs' lanes (LANE_OF=pipeline id).
  if (process.env.LANE_OF) {
    const tab = page.locator('#pipelines button', { hasText: process.env.LANE_OF });
    await tab.click();
    await page.waitForFunction(() => document.getElementById('info').textContent.includes('lane '), null, { timeout: 10000, polling: 250 });
    result.info = await page.evaluate(() => [...document.querySelectorAll('#info tr')].map((r) => r.textContent));
  }
  result.screenshot = screenshot;
  ok =
    result.consoleErrors.length === 0 &&
    result.pageErrors.length === 0 &&
    result.failedRequests.length === 0 &&
    seen.outRate > 0 &&
    seen.ratePixels > 0 &&
    seen.scrollHeight <= seen.innerHeight &&
    seen.scrollWidth <= seen.innerWidth;
} catch (e) {
  result.error = String(e && e.message ? e.message : e);
} finally {
  await context.close().catch(() => {});
  clearTimeout(watchdog);
}
result.ok = ok;
console.log(JSON.stringify(result));
process.exit(ok ? 0 : 1);
