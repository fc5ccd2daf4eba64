import { describe, expect, it } from 'vitest';
import { type CallVerdict, callVerdict, type VerdictCall, worstDelivery } from '../src/index.js';

const refused = (status: number, error: string) =>
  callVerdict({ operation: 'AuthCode', outcome: 'client-error', status, error }, null).text;

const answered: VerdictCall = { operation: 'AuthCode', outcome: 'ok', status: 200, error: null };
const push: VerdictCall = { ...answered, operation: 'SendNotificationType' };

describe('a refused or failed call, in staff’s words', () => {
  it('says what the caller got wrong, with the status the wire had', () => {
    expect(refused(500, 'Missing parameter: phone.')).toBe('Refused: missing parameter (500)');
    expect(refused(400, "Invalid phone: '12' is not a valid phone number.")).toBe(
      'Refused: invalid phone (400)',
    );
    expect(refused(400, 'Unknown school: https://x.example/. Register it in the console.')).toBe(
      'Refused: unknown school (400)',
    );
    expect(refused(500, 'Nope Web Service method name is not valid.')).toBe(
      'Refused: unknown operation (500)',
    );
    expect(refused(400, 'Server was unable to read request. ---> Root element is missing.')).toBe(
      'Refused: unreadable XML (400)',
    );
    expect(refused(429, 'Too many codes for this phone: at most 5 per 15 min.')).toBe(
      'Refused: too many codes (429)',
    );
    expect(refused(404, "No book exists for term 'T1' and class '9C'.")).toBe('Refused: no such book (404)');
    expect(refused(416, 'range bytes=999999- not satisfiable')).toBe('Refused: range not satisfiable (416)');
    // Recorded without a text: the status says it.
    expect(
      callVerdict({ operation: null, outcome: 'client-error', status: 416, error: null }, null).text,
    ).toBe('Refused: range not satisfiable (416)');
  });

  it('falls back to the status alone for a text it does not know, and says Failed for the server’s own', () => {
    expect(refused(418, 'Something new.')).toBe('Refused (418)');
    expect(
      callVerdict({ ...answered, outcome: 'server-error', status: 500, error: 'internal' }, null),
    ).toEqual({
      text: 'Failed (500)',
      tone: 'error',
    });
  });
});

describe('an answered call, with what came of what it queued', () => {
  const verdict = (call: VerdictCall, state: Parameters<typeof callVerdict>[1]): CallVerdict =>
    callVerdict(call, state);

  it('is never ok while its SMS did not reach the phone', () => {
    expect(verdict(answered, { state: 'dead', count: 1 })).toEqual({
      text: 'Answered · SMS not delivered',
      tone: 'error',
    });
    expect(verdict(answered, { state: 'expired', count: 1 })).toEqual({
      text: 'Answered · SMS not delivered, too late',
      tone: 'error',
    });
    expect(verdict(answered, { state: 'retrying', count: 1 })).toEqual({
      text: 'Answered · SMS not sent yet, retrying',
      tone: 'warn',
    });
    expect(verdict(answered, { state: 'logged', count: 1 })).toEqual({
      text: 'Answered · SMS logged, not sent',
      tone: 'warn',
    });
  });

  it('is pending while it is on its way, and ok once sent or when nothing was queued', () => {
    expect(verdict(answered, { state: 'waiting', count: 1 })).toEqual({
      text: 'Answered · SMS queued',
      tone: 'pending',
    });
    expect(verdict(answered, { state: 'sending', count: 1 }).tone).toBe('pending');
    expect(verdict(answered, { state: 'sent', count: 1 })).toEqual({
      text: 'Answered · SMS sent',
      tone: 'ok',
    });
    expect(verdict({ ...answered, operation: 'pushNoti' }, null)).toEqual({ text: 'Answered', tone: 'ok' });
    expect(verdict(answered, undefined)).toEqual({
      text: 'Answered · checking its delivery',
      tone: 'pending',
    });
  });

  it('says a failure of one of several pushes of "not all" of them', () => {
    expect(verdict(push, { state: 'dead', count: 3 }).text).toBe('Answered · 3 pushes: not all delivered');
    expect(verdict(push, { state: 'sent', count: 3 }).text).toBe('Answered · 3 pushes sent');
    expect(verdict(push, { state: 'sent', count: 1 }).text).toBe('Answered · push sent');
  });

  it('takes the worst of the deliveries themselves, a pending one tried already as retrying', () => {
    const sent = { id: 1, status: 'sent', attempts: 1 } as const;
    const retry = { id: 2, status: 'pending', attempts: 2 } as const;
    const dead = { id: 3, status: 'dead', attempts: 8 } as const;
    expect(worstDelivery([sent, retry])).toEqual({ delivery: { state: 'retrying', count: 2 }, worst: retry });
    expect(worstDelivery([sent, dead, retry])?.worst).toBe(dead);
    expect(worstDelivery([{ id: 4, status: 'pending', attempts: 0 }])?.delivery.state).toBe('waiting');
    expect(worstDelivery([])).toBeNull();
  });
});
