// The seeded history of the benches that need a big one (history.mjs, retention.mjs): the calls'
// shapes (five operations, five bindings, ~300 B of request and ~200 B of response text each), and
// PostgreSQL's seeding, made by the database itself in INSERT … SELECT over generate_series.

export const OPS = [
  ['AuthCodeSending', 'AuthCode'],
  ['BookPdf', 'GetBookPdfByTerm'],
  ['NotificationNotes', 'SendNotificationType'],
  ['NotificationNotes', 'SendMarkNotes'],
  ['PushNotificationMobile', 'pushNoti'],
];
export const BINDINGS = ['soap11', 'soap12', 'http-get', 'http-post', 'console'];
/** Call i's caller (10.3.2.1 for the 197 121st). */
export const ipOf = (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
export const CALL_COLUMNS =
  'at, group_name, operation, binding, caller_ip, user_agent, params, outcome, status, error, duration_ms, request, request_bytes, response, response_bytes, phone';
export const DELIVERY_COLUMNS =
  'call_id, kind, provider, recipient, payload, status, attempts, next_attempt_at, idempotency_key, created_at, updated_at';
/**
 * Call i's school with `schools` schools (1 … schools), five calls at a time in turn (one of each
 * operation, of every binding): each school a 1/schools share of every kind of call and of every
 * day; null without schools.
 */
export const schoolOf = (i, schools) => (schools > 0 ? (Math.floor(i / 5) % schools) + 1 : null);

const list = (values) => `ARRAY[${values.map((v) => `'${v}'`).join(', ')}]`;

/**
 * `total` calls spread evenly over [from, from + span) (epoch ms), oldest first, into `calls`
 * (PostgreSQL routes them to the partitions of their times): call i is OPS[i % 5], one in 17 a
 * client error, of school schoolOf(i, schools). `client` is a connected pg.Client. `first` and
 * `count` seed calls first … first + count - 1 of them only (a chunk: the same rows, a statement
 * at a time).
 */
export async function seedCallsPostgres(
  client,
  { total, from, span, first = 0, count = total - first, schools = 0 },
) {
  await client.query(
    `INSERT INTO calls (${CALL_COLUMNS}, school_id)
     SELECT $1::bigint + floor(i::float8 / $3::bigint * $2::bigint)::bigint,
       g.name, g.op,
       (${list(BINDINGS)})[(i * 7) % 5 + 1],
       '10.' || ((i >> 16) & 255) || '.' || ((i >> 8) & 255) || '.' || (i & 255),
       'ksoap2-android/2.6.0+',
       '{"code":"***","phone":"' || g.phone || '"}',
       CASE WHEN i % 17 = 0 THEN 'client-error' ELSE 'ok' END,
       CASE WHEN i % 17 = 0 THEN 400 ELSE 200 END,
       CASE WHEN i % 17 = 0 THEN 'Missing parameter: phone.' END,
       1.2,
       'POST /' || g.name || E'.asmx HTTP/1.1\\r\\nContent-Type: text/xml; charset=utf-8\\r\\n\\r\\n'
         || '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><'
         || g.op || ' xmlns="http://tempuri.org/"><code>***</code><phone>' || g.phone || '</phone></'
         || g.op || '></soap:Body></soap:Envelope>',
       300,
       E'HTTP/1.1 200\\r\\nContent-Type: text/xml; charset=utf-8\\r\\n\\r\\n<soap:Envelope><soap:Body><'
         || g.op || 'Response xmlns="http://tempuri.org/" /></soap:Body></soap:Envelope>',
       200,
       CASE WHEN g.op = 'AuthCode' THEN g.phone END,
       CASE WHEN $6::int > 0 THEN (i / 5) % $6::int + 1 END
     FROM generate_series($4::bigint, $5::bigint) AS i,
       LATERAL (SELECT (${list(OPS.map((o) => o[0]))})[i % 5 + 1] AS name,
         (${list(OPS.map((o) => o[1]))})[i % 5 + 1] AS op,
         '+4479111' || lpad((i % 100000)::text, 5, '0') AS phone) AS g
     ORDER BY i`,
    [from, span, total, first, first + count - 1, schools],
  );
}

/**
 * Each AuthCode call of [from, to) gets its SMS, settled: `sent`, or `dead` for one in `deadEvery`
 * (by call id, every fifth call being an AuthCode: numbered from 1, the first is dead); 0 for none.
 * With `attempts`, each delivery gets the one attempt that settled it. Each is its call's school's.
 */
export async function seedDeliveriesPostgres(client, { from, to, deadEvery = 0, attempts = false }) {
  const dead = deadEvery > 0 ? `(id - 1) / 5 % ${deadEvery} = 0` : 'false';
  await client.query(
    `INSERT INTO deliveries (${DELIVERY_COLUMNS}, school_id)
     SELECT id, 'sms', 'http', '+447911100000', '{}',
       CASE WHEN ${dead} THEN 'dead' ELSE 'sent' END,
       1, at, 'key-' || id, at, at, school_id
     FROM calls WHERE operation = 'AuthCode' AND at >= $1::bigint AND at < $2::bigint ORDER BY id`,
    [from, to],
  );
  if (!attempts) return;
  await client.query(
    `INSERT INTO delivery_attempts (delivery_id, provider, started_at, finished_at, outcome, status, response)
     SELECT id, provider, created_at, created_at + 120,
       CASE status WHEN 'sent' THEN 'sent' ELSE 'permanent' END,
       CASE status WHEN 'sent' THEN 200 ELSE 400 END,
       CASE status WHEN 'sent' THEN '{"id":"m' || id || '"}' ELSE '{"error":"invalid number"}' END
     FROM deliveries WHERE created_at >= $1::bigint AND created_at < $2::bigint ORDER BY id`,
    [from, to],
  );
}
