// A minimal kairos callback receiver: it checks each callback's Standard
// Webhooks signature with the standardwebhooks package, over the raw body,
// and answers 204, or 401 when it does not hold.
//
//   npm ci && KAIROS_SECRET_CURRENT=whsec_... node receiver.js --port 9000
//
// The secrets come from the environment only (KAIROS_SECRET_CURRENT and,
// during a rotation, KAIROS_SECRET_NEXT: GET /v1/signing-keys shows both), so
// they never show in the process list. The port comes from --port or PORT
// (default 9000; 0 picks a free one). It listens on 127.0.0.1 only and prints
// one line per accepted callback.
import http from "node:http";
import { parseArgs } from "node:util";
import { Webhook } from "standardwebhooks";

const maxBody = 10 << 20;

const { values } = parseArgs({ options: { port: { type: "string" } } });
const port = Number(values.port ?? process.env.PORT ?? 9000);
const secrets = [process.env.KAIROS_SECRET_CURRENT, process.env.KAIROS_SECRET_NEXT].filter(Boolean);
if (secrets.length === 0) {
  console.error("set KAIROS_SECRET_CURRENT to the tenant's signing secret (whsec_..., from GET /v1/signing-keys)");
  process.exit(2);
}
const hooks = secrets.map((s) => new Webhook(s));

// verify returns null when body carries a valid signature under any of the
// secrets, else the last library error. verify also rejects a
// webhook-timestamp more than 5 minutes from now.
function verify(body, headers) {
  let last = null;
  for (const wh of hooks) {
    try {
      // jsonParse: false, since a valid signature over a body that is not
      // JSON is still valid; parse the body yourself once it is verified.
      wh.verify(body, headers, { jsonParse: false });
      return null;
    } catch (err) {
      last = err;
    }
  }
  return last;
}

const server = http.createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size > maxBody) {
      res.writeHead(413).end("body too large\n");
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on("end", () => {
    // The body exactly as it arrived: the signature covers these bytes.
    // Never JSON.parse and re-stringify it before verifying.
    const body = Buffer.concat(chunks);
    const err = verify(body, req.headers);
    if (err) {
      console.error(`rejected: ${err.message}`);
      res.writeHead(401).end("invalid signature\n");
      return;
    }
    // webhook-id stays the same across retries of a job: deduplicate on it.
    const h = req.headers;
    console.log(`accepted webhook-id=${h["webhook-id"]} job=${h["kairos-job-id"]} attempt=${h["kairos-attempt"]} bytes=${body.length}`);
    res.writeHead(204).end();
  });
});

server.listen(port, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
