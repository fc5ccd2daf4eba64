import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from './helpers.js';

/**
 * The five doors an AuthCode comes in by (docs/bindings.md), each sending code 4821 to a phone and
 * reading what the caller would read: the status and the refusal's text in the door's own terms
 * (docs/faults.md), undefined when the call was taken.
 */
export const AUTHCODE_DOORS = ['soap11', 'soap12', 'http-get', 'http-post', 'console'] as const;
export type AuthCodeDoor = (typeof AUTHCODE_DOORS)[number];

export interface DoorAnswer {
  readonly status: number;
  readonly text: string | undefined;
}

const NS = 'http://tempuri.org/';
const URL_PATH = '/AuthCodeSending.asmx';

const envelope = (soapNs: string, phone: string) =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${soapNs}"><soap:Body>` +
  `<AuthCode xmlns="${NS}"><code>4821</code><phone>${phone}</phone></AuthCode></soap:Body></soap:Envelope>`;

/** A bad-input refusal's text as each door carries it; nothing for an answer that is no refusal. */
function refusalText(door: AuthCodeDoor, res: LightMyRequestResponse): string | undefined {
  if (res.statusCode === 200) return undefined;
  switch (door) {
    case 'soap11':
      return /<faultstring>([^<]*)<\/faultstring>/.exec(res.body)?.[1];
    case 'soap12':
      return /<soap:Text[^>]*>([^<]*)<\/soap:Text>/.exec(res.body)?.[1];
    case 'console':
      return res.json().detail;
    default:
      return res.body;
  }
}

function send(t: TestApp, door: AuthCodeDoor, phone: string): Promise<LightMyRequestResponse> {
  switch (door) {
    case 'soap11':
      return t.app.inject({
        method: 'POST',
        url: URL_PATH,
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: `"${NS}AuthCode"` },
        payload: envelope('http://schemas.xmlsoap.org/soap/envelope/', phone),
      });
    case 'soap12':
      return t.app.inject({
        method: 'POST',
        url: URL_PATH,
        headers: { 'content-type': `application/soap+xml; charset=utf-8; action="${NS}AuthCode"` },
        payload: envelope('http://www.w3.org/2003/05/soap-envelope', phone),
      });
    case 'http-get':
      return t.app.inject({
        method: 'GET',
        url: `${URL_PATH}/AuthCode?code=4821&phone=${encodeURIComponent(phone)}`,
      });
    case 'http-post':
      return t.app.inject({
        method: 'POST',
        url: `${URL_PATH}/AuthCode`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `code=4821&phone=${encodeURIComponent(phone)}`,
      });
    case 'console':
      // The console's Send, as the logged-in admin.
      return t.inject({ method: 'POST', url: '/api/operations/AuthCode', payload: { code: '4821', phone } });
  }
}

/** Sends to `phone` through every door, one after another; the answers by door. */
export async function authCodeByEveryDoor(
  t: TestApp,
  phone: string,
): Promise<Record<AuthCodeDoor, DoorAnswer>> {
  const answers = {} as Record<AuthCodeDoor, DoorAnswer>;
  for (const door of AUTHCODE_DOORS) {
    const res = await send(t, door, phone);
    answers[door] = { status: res.statusCode, text: refusalText(door, res) };
  }
  return answers;
}

/** What every door answers when the phone is refused as bad input (docs/faults.md). */
export function refusedByEveryDoor(text: string): Record<AuthCodeDoor, DoorAnswer> {
  return {
    soap11: { status: 500, text },
    soap12: { status: 500, text },
    'http-get': { status: 400, text },
    'http-post': { status: 400, text },
    console: { status: 400, text },
  };
}

/** What every door answers when the code is taken. */
export const TAKEN_BY_EVERY_DOOR: Record<AuthCodeDoor, DoorAnswer> = {
  soap11: { status: 200, text: undefined },
  soap12: { status: 200, text: undefined },
  'http-get': { status: 200, text: undefined },
  'http-post': { status: 200, text: undefined },
  console: { status: 200, text: undefined },
};
