import type {
  Attempt,
  AuditEntry,
  AuditList,
  Book,
  CallDetail,
  CallList,
  CallSummary,
  Delivery,
  DeliveryDetail,
  DeliveryList,
  OperationResult,
  Problem,
  School,
  ServiceInfo,
  Session,
  Stats,
  Template,
  User,
} from '@school/contract';
import { groups } from '@school/contract';

// Realistic bodies of the JSON API, typed by the contract so they drift with it.

export const BASE_URL = 'http://school-gateway.example:3000';

export const serviceInfo: ServiceInfo = {
  namespace: 'http://tempuri.org/',
  baseUrl: BASE_URL,
  defaultPhoneRegion: null,
  smsDestinations: { allowedCountries: ['GB'], fixedLines: false },
  providers: {
    sms: {
      name: 'log',
      id: 'log',
      description:
        'log: writes each SMS to the server log (its number, and its text with the code masked); sends nothing (SMS_PROVIDER=log)',
      circuit: { state: 'closed', since: '2026-11-20T08:00:00.000Z', until: null },
      refusing: null,
    },
    smsFallback: null,
    push: {
      name: 'log',
      id: 'log',
      description:
        'log: writes each push to the server log (its topic, title, body and data); sends nothing (PUSH_PROVIDER=log)',
      circuit: { state: 'closed', since: '2026-11-20T08:00:00.000Z', until: null },
      refusing: null,
    },
  },
  storage: {
    freeBytes: 50_000_000_000,
    minFreeBytes: 1_000_000_000,
    refuseFreeBytes: 64 * 1024 * 1024,
    rawBodiesStored: true,
    refusingCalls: false,
    full: false,
  },
  groups: groups.map((g) => ({
    name: g.name,
    title: g.title,
    path: g.path,
    url: `${BASE_URL}${g.path}`,
    wsdl: `${BASE_URL}${g.path}?wsdl`,
    help: `${BASE_URL}${g.path}`,
    operations: g.operations.map((op) => ({
      name: op.name,
      summary: op.summary,
      help: `${BASE_URL}${g.path}?op=${op.name}`,
      params: op.params.map((p) => ({ name: p.name, description: p.description })),
    })),
  })),
};

export function callSummary(overrides: Partial<CallSummary> = {}): CallSummary {
  return {
    id: 7,
    at: '2026-11-20T08:15:30.000Z',
    group: 'AuthCodeSending',
    operation: 'AuthCode',
    binding: 'soap11',
    callerIp: '203.0.113.9',
    userAgent: 'Mozilla/4.0 (compatible; MSIE 6.0; MS Web Services Client Protocol 4.0.30319.42000)',
    params: { code: '***', phone: '+447911123456' },
    outcome: 'ok',
    status: 200,
    error: null,
    durationMs: 12.4,
    note: 'SMS queued to +447911123456.',
    requestId: '3f2a9c1e-7b4d-4e8a-9c0f-5d6e7f8a9b0c',
    delivery: { state: 'sent', count: 1 },
    school: null,
    ...overrides,
  };
}

export function callList(items: CallSummary[], nextCursor: string | null = null): CallList {
  return { items, nextCursor };
}

const soapRequest = [
  'POST /AuthCodeSending.asmx HTTP/1.1',
  'Host: school-gateway.example:3000',
  'Content-Type: text/xml; charset=utf-8',
  'SOAPAction: "http://tempuri.org/AuthCode"',
  '',
  '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><AuthCode xmlns="http://tempuri.org/"><code>***</code><phone>+447911123456</phone></AuthCode></soap:Body></soap:Envelope>',
].join('\r\n');

const soapResponse = [
  'HTTP/1.1 200',
  'Content-Type: text/xml; charset=utf-8',
  '',
  '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><AuthCodeResponse xmlns="http://tempuri.org/" /></soap:Body></soap:Envelope>',
].join('\r\n');

export function callDetail(overrides: Partial<CallDetail> = {}): CallDetail {
  return {
    ...callSummary(),
    request: soapRequest,
    requestBytes: soapRequest.length,
    response: soapResponse,
    responseBytes: soapResponse.length,
    ...overrides,
  };
}

export function operationResult(overrides: Partial<OperationResult> = {}): OperationResult {
  return { id: 42, outcome: 'ok', status: 200, message: 'Done.', queued: 0, ...overrides };
}

export function problem(status: number, detail: string, extra: Partial<Problem> = {}): Problem {
  const titles: Record<number, string> = {
    400: 'Invalid request',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not found',
    409: 'Conflict',
    413: 'Request too large',
    415: 'Unsupported media type',
    429: 'Too many requests',
    500: 'Internal server error',
  };
  return { type: 'about:blank', title: titles[status] ?? 'Error', status, detail, ...extra };
}

export function stats(overrides: Partial<Stats> = {}): Stats {
  return {
    from: '2026-11-19T09:00:00.000Z',
    to: '2026-11-20T09:00:00.000Z',
    bucket: 'hour',
    rows: [],
    latency: [],
    overallLatency: null,
    statuses: [],
    errors: [],
    otherErrors: 0,
    deliveries: [],
    ...overrides,
  };
}

export function delivery(overrides: Partial<Delivery> = {}): Delivery {
  return {
    id: 12,
    callId: 7,
    kind: 'sms',
    provider: 'twilio',
    recipient: '+447911123456',
    title: null,
    text: 'Your verification code is ***',
    data: null,
    status: 'sent',
    attempts: 1,
    nextAttemptAt: null,
    expiresAt: '2026-11-20T08:25:30.000Z',
    providerId: 'SM0123456789abcdef0123456789abcdef',
    providerStatus: 'delivered',
    unsureProvider: null,
    lastError: null,
    createdAt: '2026-11-20T08:15:30.000Z',
    updatedAt: '2026-11-20T08:15:31.000Z',
    sentAt: '2026-11-20T08:15:31.000Z',
    ...overrides,
  };
}

/** A push that gave up: the provider refused the topic. */
export function deadPush(overrides: Partial<Delivery> = {}): Delivery {
  return delivery({
    id: 13,
    callId: 9,
    kind: 'push',
    provider: 'fcm',
    recipient: 'school-northfield',
    title: 'New homework',
    text: 'There is a new homework notification for you.',
    data: { type: 'homework', id: '1201', baseUrlSchool: 'https://school.example.org' },
    status: 'dead',
    attempts: 8,
    expiresAt: null,
    providerId: null,
    providerStatus: null,
    lastError: 'FCM 503: The service is currently unavailable.',
    sentAt: null,
    ...overrides,
  });
}

export function attempt(overrides: Partial<Attempt> = {}): Attempt {
  return {
    id: 100,
    provider: 'fcm',
    startedAt: '2026-11-20T08:15:30.500Z',
    finishedAt: '2026-11-20T08:15:30.900Z',
    outcome: 'sent',
    status: 201,
    error: null,
    response: '{"sid":"SM0123456789abcdef0123456789abcdef","status":"queued"}',
    retryAfterMs: null,
    ...overrides,
  };
}

export function deliveryDetail(
  base: Delivery = delivery(),
  attemptLog: Attempt[] = [attempt()],
): DeliveryDetail {
  return { ...base, attemptLog };
}

export function deliveryList(
  items: Delivery[],
  counts: Partial<DeliveryList['counts']> = {},
  nextCursor: string | null = null,
): DeliveryList {
  return {
    items,
    nextCursor,
    counts: { pending: 0, sending: 0, sent: 0, logged: 0, dead: 0, expired: 0, ...counts },
  };
}

export function book(overrides: Partial<Book> = {}): Book {
  return {
    id: 3,
    termId: '2026-1',
    classId: '7B',
    sha256: 'a3f1c9e0b7d24c5e8f6a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a',
    size: 2_400_000,
    filename: 'maths-7B.pdf',
    uploadedAt: '2026-11-19T16:40:00.000Z',
    url: `${BASE_URL}/BookPdf.asmx/GetBookPdfByTerm?termId=2026-1&srid=&classId=7B`,
    ...overrides,
  };
}

export function school(overrides: Partial<School> = {}): School {
  return {
    id: 1,
    name: 'Northfield Academy',
    baseUrl: 'https://northfield.example.org',
    topicKey: 'northfield',
    topic: 'school-northfield',
    allowedIps: ['203.0.113.0/24'],
    createdAt: '2026-11-01T09:00:00.000Z',
    updatedAt: '2026-11-01T09:00:00.000Z',
    ...overrides,
  };
}

export function template(overrides: Partial<Template> = {}): Template {
  return {
    id: 1,
    type: '*',
    title: 'New notification',
    body: 'There is a new {type} notification for you.',
    updatedAt: '2026-11-01T09:00:00.000Z',
    ...overrides,
  };
}

/** Who is logged in: an admin unless told otherwise (the default every test gets, testing/server.ts). */
export function session(
  overrides: Partial<Session['user']> = {},
  rest: Partial<Omit<Session, 'user'>> = {},
): Session {
  return {
    user: {
      id: 1,
      username: 'admin',
      displayName: 'Alex Admin',
      role: 'admin',
      schoolIds: null,
      ...overrides,
    },
    idleExpiresAt: '2026-11-20T10:15:30.000Z',
    expiresAt: '2026-11-20T20:15:30.000Z',
    method: 'password',
    secondFactor: { enabled: false, required: false },
    ...rest,
  };
}

export const operatorSession = (): Session =>
  session({ id: 2, username: 'olivia', displayName: 'Olivia Operator', role: 'operator' });

export function staffUser(overrides: Partial<User> = {}): User {
  return {
    id: 1,
    username: 'admin',
    displayName: 'Alex Admin',
    role: 'admin',
    disabled: false,
    createdAt: '2026-11-01T09:00:00.000Z',
    updatedAt: '2026-11-01T09:00:00.000Z',
    lastLoginAt: '2026-11-20T08:00:00.000Z',
    secondFactor: false,
    sso: false,
    ssoSubject: null,
    schoolIds: null,
    ...overrides,
  };
}

export function auditEntry(overrides: Partial<AuditEntry> = {}): AuditEntry {
  return {
    id: 30,
    at: '2026-11-20T08:20:00.000Z',
    userId: 1,
    username: 'admin',
    ip: '198.51.100.7',
    action: 'school-update',
    target: 'school 1 (Northfield Academy)',
    details: { name: { from: 'Northfield', to: 'Northfield Academy' } },
    ...overrides,
  };
}

export function auditList(items: AuditEntry[], nextCursor: string | null = null): AuditList {
  return { items, nextCursor };
}
