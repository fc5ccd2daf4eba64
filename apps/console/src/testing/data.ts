import type {
  CallDetail,
  CallList,
  CallSummary,
  OperationResult,
  Problem,
  ServiceInfo,
  Stats,
} from '@school/contract';
import { groups } from '@school/contract';

// Realistic bodies of the JSON API, typed by the contract so they drift with it.

export const BASE_URL = 'http://school-gateway.example:3000';

export const serviceInfo: ServiceInfo = {
  namespace: 'http://tempuri.org/',
  baseUrl: BASE_URL,
  defaultPhoneRegion: null,
  providers: {
    sms: { name: 'log', description: 'Nothing leaves the machine: texts are written to the log.' },
    push: { name: 'log', description: 'Nothing leaves the machine: pushes are written to the log.' },
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
  return { id: 42, outcome: 'ok', status: 200, message: 'Done.', ...overrides };
}

export function problem(status: number, detail: string, extra: Partial<Problem> = {}): Problem {
  const titles: Record<number, string> = {
    400: 'Invalid request',
    404: 'Not found',
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
    ...overrides,
  };
}
