// The baseline: a bare Fastify route that answers the same SOAP success bytes without reading,
// validating or recording anything.
import Fastify from 'fastify';

const body = Buffer.from(
  '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><AuthCodeResponse xmlns="http://tempuri.org/" /></soap:Body></soap:Envelope>',
);
const app = Fastify({ logger: false });
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, b, done) => done(null, b));
app.post('/AuthCodeSending.asmx', (_req, reply) => {
  reply
    .header('content-type', 'text/xml; charset=utf-8')
    .header('cache-control', 'private, max-age=0')
    .send(body);
});
app.get('/healthz', () => ({ status: 'ok' }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
// Ends as the measured server does (a CPU profile, when one is asked for, is written at exit).
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
