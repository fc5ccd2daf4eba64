import { describe, expect, it } from 'vitest';
import { outcomeText } from './call-reason';

const refused = (status: number, error: string) => outcomeText({ outcome: 'client-error', status, error });

describe('a call’s outcome, in staff’s words', () => {
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
    expect(outcomeText({ outcome: 'client-error', status: 416, error: null })).toBe(
      'Refused: range not satisfiable (416)',
    );
  });

  it('falls back to the status alone for a text it does not know, and says Failed for the server’s own', () => {
    expect(refused(418, 'Something new.')).toBe('Refused (418)');
    expect(outcomeText({ outcome: 'server-error', status: 500, error: 'internal' })).toBe('Failed (500)');
    expect(outcomeText({ outcome: 'ok', status: 200, error: null })).toBe('OK');
  });
});
