// The hot path's yardstick (docs/performance.md): node-soap hosting our service's own WSDL (WSDL_FILE, saved by
// bench/run.mjs from our server's `?WSDL`), on a plain node:http server. AuthCode answers what ours
// answers, an empty AuthCodeResponse, and records and sends nothing; /healthz answers for start-up.
import fs from 'node:fs';
import http from 'node:http';
import soap from 'soap';

const wsdl = fs.readFileSync(process.env.WSDL_FILE, 'utf8');
const AuthCode = () => ({});
const services = {
  AuthCodeSending: {
    AuthCodeSendingSoap: { AuthCode },
    AuthCodeSendingSoap12: { AuthCode },
  },
};
const server = http.createServer((req, res) => {
  if (req.url === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    return;
  }
  res.writeHead(404).end();
});
// Not chunked: our server and the bare route send a content-length. The port opens once the
// WSDL is read, so that start-up's /healthz poll means AuthCode is served too.
await new Promise((resolve, reject) =>
  soap.listen(server, {
    path: '/AuthCodeSending.asmx',
    services,
    xml: wsdl,
    enableChunkedEncoding: false,
    callback: (err) => (err ? reject(err) : resolve()),
  }),
);
server.listen(Number(process.env.PORT), '127.0.0.1');
