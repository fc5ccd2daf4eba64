import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { COOL_DOWN_MS } from '../src/outbox/circuit.js';
import { registerSchool, startTestApp, type TestApp, waitUntil } from './helpers.js';

/** A fake provider: a real HTTP server whose answers a test decides, recording what it received. */
async function fakeProvider(
  answer: (
    req: http.IncomingMessage,
    body: string,
    n: number,
  ) => { status: number; headers?: Record<string, string> },
) {
  const received: { headers: http.IncomingHttpHeaders; body: string; status: number }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const { status, headers } = answer(req, body, received.length);
      received.push({ headers: req.headers, body, status });
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(status < 300 ? '{"ok":true}' : '{"error":"unavailable"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Waits until `check` holds (helpers.ts's waitUntil, looking every 20 ms). */
const until = (check: () => Promise<boolean> | boolean, what: string, ms = 10_000) =>
  waitUntil(check, { what, timeoutMs: ms, intervalMs: 20 });

const FAST = { DELIVERY_RETRY_BASE_MS: '20', DELIVERY_RETRY_MAX_MS: '200', DISPATCH_POLL_MS: '20' };

describe('outbox and dispatcher', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function app(env: Record<string, string>): Promise<TestApp> {
    const t = await startTestApp({ ...FAST, ...env });
    cleanups.push(() => t.close());
    return t;
  }

  it(
    'sends every SMS exactly once through an outage of the provider, pausing it meanwhile',
    async () => {
      let down = true;
      const gateway = await fakeProvider(() =>
        down ? { status: 503, headers: { 'retry-after': '0' } } : { status: 200 },
      );
      cleanups.push(gateway.close);
      const t = await app({
        SMS_PROVIDER: 'http',
        SMS_HTTP_URL: `${gateway.url}/send`,
        SMS_HTTP_BODY: 'to={to}&text={text}',
      });
      const codes = Array.from({ length: 8 }, (_, i) => `C0DE${i}`);
      for (const code of codes) {
        const res = await t.inject({
          method: 'GET',
          url: `/AuthCodeSending.asmx/AuthCode?code=${code}&phone=%2B447911123456`,
        });
        expect(res.statusCode).toBe(200);
      }
      // Five failures in a row open the provider's circuit: nothing more goes to it for its
      // cool-down (the first attempts of all eight may be under way at once before it opens; the
      // retries, 20 ms apart otherwise, wait).
      await until(
        () => t.app.outbox.circuits().some((c) => c.kind === 'sms' && c.state === 'open'),
        'the circuit open',
      );
      // Attempts sent just before it opened have arrived once the outbox is idle (none under way).
      await t.app.outbox.idle();
      const whenOpened = gateway.received.length;
      expect(whenOpened).toBeGreaterThanOrEqual(5);
      // Once every retry is due, a pass of the dispatcher (the one idle() waits for) still sends
      // nothing: the circuit holds them back.
      await until(async () => {
        const pending = await t.app.store.db
          .selectFrom('deliveries')
          .select('next_attempt_at')
          .where('status', '=', 'pending')
          .execute();
        const now = Date.now();
        return pending.length > 0 && pending.every((d) => d.next_attempt_at <= now);
      }, 'every retry due');
      await t.app.outbox.idle();
      expect(gateway.received.length).toBe(whenOpened);
      expect(t.app.outbox.circuits().find((c) => c.kind === 'sms')?.state).toBe('open');
      down = false;
      // Then it is probed, works, and everything is sent.
      await until(
        async () => (await t.app.deliveryRollups.stateCounts()).sent === 8,
        'all sent',
        COOL_DOWN_MS + 10_000,
      );
      const accepted = gateway.received
        .filter((r) => r.status === 200)
        .map((r) => new URLSearchParams(r.body).get('text'));
      expect(accepted.sort()).toEqual(codes.map((c) => `Your verification code is ${c}`).sort());
      // Settled deliveries keep no auth code in clear.
      const payloads = await t.app.store.db.selectFrom('deliveries').select('payload').execute();
      for (const { payload } of payloads)
        expect(payload).toBe('{"maskedText":"Your verification code is ***"}');
      const attempts = await t.app.store.db
        .selectFrom('delivery_attempts')
        .select(['outcome', 'status'])
        .execute();
      expect(attempts.filter((a) => a.outcome === 'transient').every((a) => a.status === 503)).toBe(true);
    },
    COOL_DOWN_MS + 20_000,
  );

  it('logs an SMS of the log provider with its code and all but the end of its number masked', async () => {
    const lines: string[] = [];
    const t = await startTestApp({ ...FAST, SMS_PROVIDER: 'log' }, undefined, {
      level: 'info',
      stream: { write: (line: string) => void lines.push(line) },
    });
    cleanups.push(() => t.close());
    const res = await t.inject({
      method: 'GET',
      url: '/AuthCodeSending.asmx/AuthCode?code=Q7X2K9&phone=%2B447911123456',
    });
    expect(res.statusCode).toBe(200);
    await until(async () => (await t.app.deliveryRollups.stateCounts()).logged === 1, 'logged');
    const logged = lines.map((l) => JSON.parse(l)).filter((l) => l.msg?.startsWith('SMS logged'));
    expect(logged).toEqual([
      expect.objectContaining({ to: '+44•••••••456', text: 'Your verification code is ***' }),
    ]);
    expect(lines.join('')).not.toContain('Q7X2K9');
    expect(lines.join('')).not.toContain('7911123456');
  });

  it('gives up after the maximum attempts, and a dead delivery can be retried from the API', async () => {
    let fail = true;
    const gateway = await fakeProvider(() => ({ status: fail ? 500 : 200 }));
    cleanups.push(gateway.close);
    const t = await app({
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: `${gateway.url}/send`,
      SMS_HTTP_BODY: 'to={to}&text={text}',
      DELIVERY_MAX_ATTEMPTS: '3',
    });
    await t.inject({ method: 'GET', url: '/AuthCodeSending.asmx/AuthCode?code=1&phone=%2B447911123456' });
    await until(async () => (await t.app.deliveryRollups.stateCounts()).dead === 1, 'dead');
    expect(gateway.received).toHaveLength(3);
    fail = false;
    const [dead] = await t.app.outbox.deliveries.search({ status: 'dead' }, { limit: 1 });
    const res = await t.inject({ method: 'POST', url: `/api/deliveries/${dead?.id}/retry` });
    expect(res.statusCode).toBe(200);
    await until(async () => (await t.app.deliveryRollups.stateCounts()).sent === 1, 'sent after retry');
    // Sent with its text: a dead code keeps it while it is valid.
    expect(new URLSearchParams(gateway.received.at(-1)?.body ?? '').get('text')).toBe(
      'Your verification code is 1',
    );
    const again = await t.inject({ method: 'POST', url: `/api/deliveries/${dead?.id}/retry` });
    expect(again.statusCode).toBe(409);
    const detail = (await t.inject({ method: 'GET', url: `/api/deliveries/${dead?.id}` })).json();
    expect(detail.attemptLog.map((a: { outcome: string }) => a.outcome)).toEqual([
      'transient',
      'transient',
      'transient',
      'sent',
    ]);
  });

  it('does not retry a dead code past its validity, and no longer keeps its text', async () => {
    const gateway = await fakeProvider(() => ({ status: 400 }));
    cleanups.push(gateway.close);
    const t = await app({
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: `${gateway.url}/send`,
      SMS_HTTP_BODY: 'to={to}&text={text}',
      AUTHCODE_TTL: '800ms',
      DISPATCH_POLL_MS: '50',
    });
    await t.inject({ method: 'GET', url: '/AuthCodeSending.asmx/AuthCode?code=4821&phone=%2B447911123456' });
    await until(async () => (await t.app.deliveryRollups.stateCounts()).dead === 1, 'dead');
    const [dead] = await t.app.outbox.deliveries.search({ status: 'dead' }, { limit: 1 });
    await until(async () => {
      const row = await t.app.outbox.deliveries.findById(dead?.id ?? 0);
      return row !== undefined && row.secret === null;
    }, 'sealed text destroyed once the code expired');
    // The clear code was never in the row: only the masked text is.
    expect((await t.app.outbox.deliveries.findById(dead?.id ?? 0))?.payload).not.toContain('4821');
    const res = await t.inject({ method: 'POST', url: `/api/deliveries/${dead?.id}/retry` });
    expect(res.statusCode).toBe(409);
    expect(res.json().detail).toMatch(/validity has passed/);
    expect((await t.inject({ method: 'POST', url: '/api/deliveries/retry-dead' })).json()).toEqual({
      retried: 0,
    });
    expect(gateway.received).toHaveLength(1);
  });

  it('never retries a permanent error', async () => {
    const gateway = await fakeProvider(() => ({ status: 400 }));
    cleanups.push(gateway.close);
    const t = await app({
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: `${gateway.url}/send`,
      SMS_HTTP_BODY: 'to={to}&text={text}',
    });
    await t.inject({ method: 'GET', url: '/AuthCodeSending.asmx/AuthCode?code=1&phone=%2B447911123456' });
    await until(async () => (await t.app.deliveryRollups.stateCounts()).dead === 1, 'dead');
    // A pass of the dispatcher after it died claims nothing, and nothing is under way.
    await t.app.outbox.idle();
    expect(gateway.received).toHaveLength(1);
  });

  it('lets a stale auth code expire and never sends it late', async () => {
    let up = false;
    const gateway = await fakeProvider(() => ({ status: up ? 200 : 503 }));
    cleanups.push(gateway.close);
    const t = await app({
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: `${gateway.url}/send`,
      SMS_HTTP_BODY: 'to={to}&text={text}',
      AUTHCODE_TTL: '300ms',
      DELIVERY_MAX_ATTEMPTS: '100',
    });
    await t.inject({
      method: 'GET',
      url: '/AuthCodeSending.asmx/AuthCode?code=777&phone=%2B447911123456',
    });
    await until(async () => (await t.app.deliveryRollups.stateCounts()).expired === 1, 'expired', 5000);
    const seen = gateway.received.length;
    up = true;
    // A pass of the dispatcher with the provider up claims nothing, and nothing is under way.
    await t.app.outbox.idle();
    expect(gateway.received).toHaveLength(seen);
    const [row] = await t.app.outbox.deliveries.search({}, { limit: 1 });
    expect(row?.last_error).toMatch(/never sent late/);
    expect(row?.payload).not.toContain('777');
    // An expired code cannot be retried either.
    expect((await t.inject({ method: 'POST', url: `/api/deliveries/${row?.id}/retry` })).statusCode).toBe(
      409,
    );
  });

  it('pushes typed notifications and marks to the school topics, and pushNoti says how many it dispatched', async () => {
    let up = false;
    const secret = 'a-webhook-secret-of-some-length';
    const hook = await fakeProvider(() => ({ status: up ? 200 : 503, headers: { 'retry-after': '3600' } }));
    cleanups.push(hook.close);
    const t = await app({
      PUSH_PROVIDER: 'webhook',
      PUSH_WEBHOOK_URL: `${hook.url}/push`,
      PUSH_WEBHOOK_SECRET: secret,
    });
    await registerSchool(t.app, { topicKey: 'lycee-12' });
    await t.app.store.templates.create({
      type: 'homework',
      title: 'Homework at {school}',
      body: 'New homework ({id}).',
    });
    const base = 'baseUrlSchool=HTTPS://School.Example.org';
    await t.inject({
      method: 'GET',
      url: `/NotificationNotes.asmx/SendNotificationType?id=41&${base}&TypeNotfication=homework`,
    });
    await t.inject({
      method: 'GET',
      url: `/NotificationNotes.asmx/SendNotificationType?id=42&${base}&TypeNotfication=unheard-of`,
    });
    await t.inject({
      method: 'GET',
      url: `/NotificationNotes.asmx/SendMarkNotes?id=43&id_class=7%20B&${base}`,
    });
    // The provider is down and asks for an hour's wait: the pushes wait for their retry.
    await until(() => hook.received.length === 3, 'first attempts');
    // Their failed attempts are settled (pending again, waiting) before pushNoti counts them.
    await until(async () => (await t.app.deliveryRollups.stateCounts()).pending === 3, 'waiting for a retry');
    up = true;
    const res = await t.inject({ method: 'GET', url: '/PushNotificationMobile.asmx/pushNoti' });
    expect(res.statusCode).toBe(200);
    const call = (await t.app.history.list({ limit: 1 }))[0];
    expect(call?.note).toBe('Dispatched 3 pending pushes.');
    await until(async () => (await t.app.deliveryRollups.stateCounts()).sent === 3, 'sent after pushNoti');
    const bodies = hook.received.filter((r) => r.status === 200).map((r) => JSON.parse(r.body));
    expect(bodies.map((b) => [b.topic, b.title, b.body, b.data]).sort()).toEqual(
      [
        [
          'school-lycee-12',
          'Homework at Example School',
          'New homework (41).',
          { type: 'homework', id: '41', baseUrlSchool: 'HTTPS://School.Example.org' },
        ],
        [
          'school-lycee-12',
          'New notification',
          'There is a new unheard-of notification for you.',
          { type: 'unheard-of', id: '42', baseUrlSchool: 'HTTPS://School.Example.org' },
        ],
        [
          'school-lycee-12-class-7%20B',
          'New marks',
          'New marks have been published for class 7 B.',
          { id: '43', id_class: '7 B', baseUrlSchool: 'HTTPS://School.Example.org' },
        ],
      ].sort(),
    );
  });
});

describe("sending at the provider's pace", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** A gateway that holds each request `ms` and notes when it came and how many were under way. */
  async function slowGateway(ms: number, first?: { status: number; headers: Record<string, string> }) {
    const arrivals: number[] = [];
    let open = 0;
    let most = 0;
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        arrivals.push(Date.now());
        open++;
        most = Math.max(most, open);
        const answer = arrivals.length === 1 && first ? first : { status: 200, headers: {} };
        setTimeout(() => {
          open--;
          res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
          res.end('{}');
        }, ms);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    return { url, arrivals, most: () => most };
  }

  async function queueCodes(env: Record<string, string>, url: string, n: number) {
    const t = await startTestApp({
      ...FAST,
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: `${url}/send`,
      SMS_HTTP_BODY: 'to={to}&text={text}',
      ...env,
    });
    cleanups.push(() => t.close());
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        t.inject({
          method: 'GET',
          url: `/AuthCodeSending.asmx/AuthCode?code=${1000 + i}&phone=%2B447911123456`,
        }),
      ),
    );
    expect(answers.every((a) => a.statusCode === 200)).toBe(true);
    return t;
  }

  it('keeps SMS_CONCURRENCY requests under way at once, and no more', async () => {
    const gateway = await slowGateway(150);
    const t = await queueCodes({ SMS_CONCURRENCY: '24' }, gateway.url, 60);
    await until(async () => (await t.app.deliveryRollups.stateCounts()).sent === 60, 'all sent');
    expect(gateway.most()).toBe(24);
  });

  it('starts no more than SMS_RATE_LIMIT sends a second', async () => {
    const gateway = await slowGateway(5);
    const t = await queueCodes({ SMS_RATE_LIMIT: '20', SMS_CONCURRENCY: '64' }, gateway.url, 45);
    await until(async () => (await t.app.deliveryRollups.stateCounts()).sent === 45, 'all sent', 15_000);
    // A bucket of one second's sends to start with, then 20 a second: 45 are started over at
    // least 1.25 s (arrivals, less the first connections' set-up), and no second holds more than
    // the burst and a second's worth. Uncapped, they all arrive within a few milliseconds.
    const span = (gateway.arrivals.at(-1) as number) - (gateway.arrivals[0] as number);
    expect(span).toBeGreaterThanOrEqual(1000);
    for (const start of gateway.arrivals) {
      expect(gateway.arrivals.filter((a) => a >= start && a < start + 1000).length).toBeLessThanOrEqual(41);
    }
  });

  it('waits as a 429 from the provider asks before sending it anything more', async () => {
    const gateway = await slowGateway(5, { status: 429, headers: { 'retry-after': '2' } });
    const t = await queueCodes({ SMS_CONCURRENCY: '1' }, gateway.url, 3);
    await until(async () => (await t.app.deliveryRollups.stateCounts()).sent === 3, 'all sent', 15_000);
    const [refused, next] = gateway.arrivals as [number, number];
    expect(next - refused).toBeGreaterThanOrEqual(1900);
  });
});

describe('pushNoti', () => {
  it('dispatches nothing when its call cannot be recorded', async () => {
    const hook = await fakeProvider(() => ({ status: 503, headers: { 'retry-after': '3600' } }));
    const t = await startTestApp({
      ...FAST,
      PUSH_PROVIDER: 'webhook',
      PUSH_WEBHOOK_URL: `${hook.url}/push`,
      PUSH_WEBHOOK_SECRET: 'a-webhook-secret-of-some-length',
    });
    try {
      await registerSchool(t.app);
      await t.inject({
        method: 'GET',
        url: '/NotificationNotes.asmx/SendMarkNotes?id=1&id_class=7B&baseUrlSchool=https://school.example.org/',
      });
      await until(() => hook.received.length === 1, 'first attempt');
      // Its end is written in a later commit (finished attempts ride in the next one, 10 ms on).
      await until(
        async () =>
          ((await t.app.outbox.deliveries.search({}, { limit: 1 }))[0]?.next_attempt_at ?? 0) >
          Date.now() + 3_000_000,
        'the retry an hour away, as the webhook asked',
      );
      const [before] = await t.app.outbox.deliveries.search({}, { limit: 1 });
      t.app.recorder.record = async () => {
        throw new Error('disk full');
      };
      const res = await t.inject({ method: 'GET', url: '/PushNotificationMobile.asmx/pushNoti' });
      expect(res.statusCode).toBe(500);
      const [after] = await t.app.outbox.deliveries.search({}, { limit: 1 });
      expect(after?.next_attempt_at).toBe(before?.next_attempt_at);
    } finally {
      await t.close();
      await hook.close();
    }
  });
});

describe('schools', () => {
  const SOAP11 = (op: string, inner: string) => ({
    headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"http://tempuri.org/${op}"` },
    payload: `<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><${op} xmlns="http://tempuri.org/">${inner}</${op}></soap:Body></soap:Envelope>`,
  });
  const SOAP12 = (op: string, inner: string) => ({
    headers: { 'content-type': 'application/soap+xml; charset=utf-8' },
    payload: `<soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope"><soap:Body><${op} xmlns="http://tempuri.org/">${inner}</${op}></soap:Body></soap:Envelope>`,
  });

  async function callEveryBinding(t: TestApp, baseUrlSchool: string, remoteAddress: string) {
    const inner = `<id>1</id><baseUrlSchool>${baseUrlSchool}</baseUrlSchool><TypeNotfication>homework</TypeNotfication>`;
    const query = `id=1&baseUrlSchool=${encodeURIComponent(baseUrlSchool)}&TypeNotfication=homework`;
    const path = '/NotificationNotes.asmx';
    return {
      soap11: await t.inject({
        method: 'POST',
        url: path,
        remoteAddress,
        ...SOAP11('SendNotificationType', inner),
      }),
      soap12: await t.inject({
        method: 'POST',
        url: path,
        remoteAddress,
        ...SOAP12('SendNotificationType', inner),
      }),
      get: await t.inject({ method: 'GET', url: `${path}/SendNotificationType?${query}`, remoteAddress }),
      post: await t.inject({
        method: 'POST',
        url: `${path}/SendNotificationType`,
        remoteAddress,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: query,
      }),
    };
  }

  it('refuses an unregistered school in all four bindings, saying how to fix it', async () => {
    const t = await startTestApp();
    try {
      const r = await callEveryBinding(t, 'https://unknown.example.net/', '203.0.113.5');
      const text = 'Unknown school: https://unknown.example.net/. Register it in the console.';
      for (const soap of [r.soap11, r.soap12]) {
        expect(soap.statusCode).toBe(500);
        expect(soap.body).toContain(text);
      }
      expect(r.soap11.body).toContain('<faultcode>soap:Client</faultcode>');
      expect(r.soap12.body).toContain('<soap:Value>soap:Sender</soap:Value>');
      for (const plain of [r.get, r.post]) {
        expect(plain.statusCode).toBe(400);
        expect(plain.body).toBe(text);
      }
      expect(await t.app.store.db.selectFrom('deliveries').selectAll().execute()).toHaveLength(0);
      const calls = await t.app.history.list({ limit: 4 });
      expect(calls.map((c) => c.outcome)).toEqual([
        'client-error',
        'client-error',
        'client-error',
        'client-error',
      ]);
    } finally {
      await t.close();
    }
  });

  it('refuses a caller outside the school ranges (403 / Client fault) and serves one inside', async () => {
    const t = await startTestApp();
    try {
      await registerSchool(t.app, { allowedIps: '198.51.100.0/24,2001:db8::/32' });
      const outside = await callEveryBinding(t, 'https://school.example.org/', '203.0.113.5');
      const text = 'Caller 203.0.113.5 is not allowed to send for the school Example School.';
      expect(outside.soap11.statusCode).toBe(500);
      expect(outside.soap11.body).toContain(
        `<faultcode>soap:Client</faultcode><faultstring>${text}</faultstring>`,
      );
      expect(outside.soap12.body).toContain('soap:Sender');
      for (const plain of [outside.get, outside.post]) {
        expect(plain.statusCode).toBe(403);
        expect(plain.body).toBe(text);
      }
      const inside = await callEveryBinding(t, 'https://school.example.org/', '198.51.100.77');
      expect([inside.soap11, inside.soap12, inside.get, inside.post].map((r) => r.statusCode)).toEqual([
        200, 200, 200, 200,
      ]);
      expect(await t.app.store.db.selectFrom('deliveries').selectAll().execute()).toHaveLength(4);
    } finally {
      await t.close();
    }
  });
});

describe('Twilio', () => {
  it('sends the SMS through the Messages API and takes signed status callbacks', async () => {
    const requests: { path: string; auth: string; idem: string; form: URLSearchParams }[] = [];
    const fake = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        requests.push({
          path: req.url ?? '',
          auth: String(req.headers.authorization),
          idem: String(req.headers['i-twilio-idempotency-token']),
          form: new URLSearchParams(body),
        });
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ sid: 'SM0123456789abcdef0123456789abcdef', status: 'queued' }));
      });
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    const callback = 'https://sms.example.org/hooks/twilio/status';
    const token = 'twilio-auth-token-0123456789abcdef';
    const t = await startTestApp({
      ...FAST,
      SMS_PROVIDER: 'twilio',
      TWILIO_BASE_URL: `http://127.0.0.1:${(fake.address() as AddressInfo).port}`,
      TWILIO_ACCOUNT_SID: `AC${'1'.repeat(32)}`,
      TWILIO_AUTH_TOKEN: token,
      TWILIO_FROM: '+15005550006',
      TWILIO_STATUS_CALLBACK_URL: callback,
    });
    try {
      await t.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx/AuthCode?code=9911&phone=%2B447911123456',
      });
      await until(async () => (await t.app.deliveryRollups.stateCounts()).sent === 1, 'sent');
      expect(requests).toHaveLength(1);
      const [req] = requests;
      expect(req?.path).toBe(`/2010-04-01/Accounts/AC${'1'.repeat(32)}/Messages.json`);
      expect(req?.auth).toBe(`Basic ${Buffer.from(`AC${'1'.repeat(32)}:${token}`).toString('base64')}`);
      expect(Object.fromEntries(req?.form ?? [])).toEqual({
        To: '+447911123456',
        From: '+15005550006',
        Body: 'Your verification code is 9911',
        StatusCallback: callback,
      });
      const [delivery] = await t.app.outbox.deliveries.search({}, { limit: 1 });
      expect(req?.idem).toBe(delivery?.idempotency_key);
      expect(delivery?.provider_id).toBe('SM0123456789abcdef0123456789abcdef');

      const fields = {
        MessageSid: 'SM0123456789abcdef0123456789abcdef',
        MessageStatus: 'undelivered',
        ErrorCode: '30003',
      };
      const { createHmac } = await import('node:crypto');
      const signed = createHmac('sha1', token)
        .update(
          callback +
            Object.keys(fields)
              .sort()
              .map((k) => k + fields[k as keyof typeof fields])
              .join(''),
        )
        .digest('base64');
      const form = new URLSearchParams(fields).toString();
      const headers = { 'content-type': 'application/x-www-form-urlencoded' };
      const forged = await t.inject({
        method: 'POST',
        url: '/hooks/twilio/status',
        headers: { ...headers, 'x-twilio-signature': 'bad' },
        payload: form,
      });
      expect(forged.statusCode).toBe(403);
      const ok = await t.inject({
        method: 'POST',
        url: '/hooks/twilio/status',
        headers: { ...headers, 'x-twilio-signature': signed },
        payload: form,
      });
      expect(ok.statusCode).toBe(204);
      const updated = (await t.inject({ method: 'GET', url: `/api/deliveries/${delivery?.id}` })).json();
      expect(updated.providerStatus).toBe('undelivered (error 30003)');
      expect(updated.text).toBe('Your verification code is ***');
    } finally {
      await t.close();
      await new Promise((r) => fake.close(r));
    }
  });
});

describe('AuthCode abuse limits', () => {
  it('refuses the sixth code to a phone within 15 minutes, in the caller binding, with Retry-After', async () => {
    const t = await startTestApp({ AUTHCODE_LIMIT_PER_PHONE: '5/15m', AUTHCODE_LIMIT_PER_IP: '30/1m' });
    try {
      for (let i = 0; i < 5; i++) {
        const ok = await t.inject({
          method: 'GET',
          url: `/AuthCodeSending.asmx/AuthCode?code=${i}&phone=%2B447911123456`,
        });
        expect(ok.statusCode).toBe(200);
      }
      const get = await t.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx/AuthCode?code=9&phone=%2B447911123456',
      });
      expect(get.statusCode).toBe(429);
      expect(Number(get.headers['retry-after'])).toBeGreaterThan(800);
      expect(get.body).toMatch(
        /^Too many codes for this phone: at most 5 per 15 minutes\. Try again in 1[45] minutes\.$/,
      );
      const soap = await t.inject({
        method: 'POST',
        url: '/AuthCodeSending.asmx',
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '"http://tempuri.org/AuthCode"' },
        payload:
          '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>9</code><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>',
      });
      expect(soap.statusCode).toBe(500);
      expect(soap.body).toContain(
        '<faultcode>soap:Client</faultcode><faultstring>Too many codes for this phone',
      );
      const api = await t.inject({
        method: 'POST',
        url: '/api/operations/AuthCode',
        payload: { code: '9', phone: '+447911123456' },
      });
      expect(api.statusCode).toBe(429);
      expect(api.headers['retry-after']).toBeDefined();
      // Another phone is not limited; nothing was queued for the refused calls.
      const other = await t.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx/AuthCode?code=1&phone=%2B447911123457',
      });
      expect(other.statusCode).toBe(200);
      expect(await t.app.store.db.selectFrom('deliveries').selectAll().execute()).toHaveLength(6);
      const refused = await t.app.history.list({ limit: 4 });
      expect(refused.slice(1).map((c) => c.status)).toEqual([429, 500, 429]);
    } finally {
      await t.close();
    }
  });

  it('limits codes per caller address', async () => {
    const t = await startTestApp({ AUTHCODE_LIMIT_PER_IP: '3/1m' });
    try {
      const send = (n: number) =>
        t.inject({
          method: 'GET',
          url: `/AuthCodeSending.asmx/AuthCode?code=1&phone=%2B4479111234${50 + n}`,
          remoteAddress: '198.51.100.9',
        });
      for (let i = 0; i < 3; i++) expect((await send(i)).statusCode).toBe(200);
      const fourth = await send(3);
      expect(fourth.statusCode).toBe(429);
      expect(fourth.body).toMatch(
        /^Too many codes for this caller \(198\.51\.100\.9\): at most 3 per minute\./,
      );
      const elsewhere = await t.inject({
        method: 'GET',
        url: '/AuthCodeSending.asmx/AuthCode?code=1&phone=%2B447911123470',
        remoteAddress: '198.51.100.10',
      });
      expect(elsewhere.statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});
