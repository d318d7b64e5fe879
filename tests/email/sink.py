"""An SMTP sink (aiosmtpd) for tests/email.rs: each email it accepts is appended to OUT as one
JSON line (envelope sender, recipients, the raw message, the AUTH login if any).

usage: sink.py PORT OUT [--auth USER:PASSWORD] [--busy N]

--auth: AUTH (PLAIN or LOGIN) required, with that login.
--busy: the first N emails are refused with 451 (try again later).
Recipients at reject.example are refused with 550 (a permanent refusal).
"""
import argparse
import json
import time

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

p = argparse.ArgumentParser()
p.add_argument("port", type=int)
p.add_argument("out")
p.add_argument("--auth")
p.add_argument("--busy", type=int, default=0)
args = p.parse_args()


class Sink:
    def __init__(self):
        self.busy = args.busy

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.endswith("@reject.example"):
            return "550 5.1.1 no such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.busy > 0:
            self.busy -= 1
            return "451 4.3.0 busy, try again later"
        login = session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None
        with open(args.out, "a") as f:
            f.write(json.dumps({
                "from": envelope.mail_from,
                "to": envelope.rcpt_tos,
                "data": envelope.content.decode("utf-8", "replace"),
                "login": login,
            }) + "\n")
        return "250 Message accepted"


def authenticator(server, session, envelope, mechanism, auth_data):
    user, password = args.auth.split(":", 1)
    ok = (isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user
          and auth_data.password.decode() == password)
    return AuthResult(success=ok, auth_data=auth_data)


kwargs = {}
if args.auth:
    kwargs = dict(authenticator=authenticator, auth_required=True, auth_require_tls=False)
c = Controller(Sink(), hostname="127.0.0.1", port=args.port, **kwargs)
c.start()
print("ready", flush=True)
try:
    while True:
        time.sleep(3600)
finally:
    c.stop()
