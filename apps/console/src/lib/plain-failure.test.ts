import { describe, expect, it } from 'vitest';
import { plainFailure } from './plain-failure';

describe('a failure in plain words', () => {
  it.each([
    [
      'SMS gateway refused the message: Account suspended (HTTP 403)',
      'The SMS gateway refused it: “Account suspended”',
    ],
    [
      'SMS gateway refused the message (HTTP 400)',
      'The SMS gateway refused it and gave no reason (HTTP 400)',
    ],
    [
      'SMS gateway temporarily unavailable: try later. (HTTP 503)',
      'The SMS gateway was unavailable: “try later”',
    ],
    ['Push webhook refused the push: unknown topic (HTTP 404)', 'The push relay refused it: “unknown topic”'],
    [
      'Twilio error 21610: Attempt to send to unsubscribed recipient (HTTP 400)',
      'Twilio refused it: “Attempt to send to unsubscribed recipient” (error 21610)',
    ],
    ['Twilio error (HTTP 500)', 'Twilio refused it and gave no reason (HTTP 500)'],
    [
      'SMS gateway: connection refused (ECONNREFUSED)',
      'The SMS gateway could not be reached: connection refused',
    ],
    ['SMS gateway: no answer within 10000 ms', 'The SMS gateway did not answer within 10 s'],
    [
      'FCM error UNREGISTERED: Requested entity was not found. (HTTP 404)',
      'Firebase Cloud Messaging refused it: “Requested entity was not found”',
    ],
    ['FCM error (HTTP 500)', 'Firebase Cloud Messaging refused it and gave no reason (HTTP 500)'],
    ['Sent by no provider: interrupted', 'Sent by no provider: interrupted'],
  ])('%s', (error, plain) => {
    expect(plainFailure(error)).toBe(plain);
  });
});
