import { describe, expect, it } from 'vitest';
import { deliveryPayloadJson, parseDeliveryPayload } from '../src/outbox/payload.js';

describe('delivery payloads', () => {
  it('reads and writes each kind, the kind kept in the row, not the JSON', () => {
    const sms = deliveryPayloadJson({ kind: 'sms', maskedText: 'Code ***' });
    expect(sms).toBe('{"maskedText":"Code ***"}');
    expect(parseDeliveryPayload({ kind: 'sms', payload: sms })).toEqual({
      kind: 'sms',
      maskedText: 'Code ***',
    });
    const push = deliveryPayloadJson({ kind: 'push', title: 'T', body: 'B', data: { id: '1' } });
    expect(push).toBe('{"title":"T","body":"B","data":{"id":"1"}}');
    expect(parseDeliveryPayload({ kind: 'push', payload: push })).toEqual({
      kind: 'push',
      title: 'T',
      body: 'B',
      data: { id: '1' },
    });
  });

  it('never reads an SMS text from the payload, even one a release before sealing kept there', () => {
    // The clear text lives only sealed, in the row's `secret` column (deliveries.openText).
    expect(
      parseDeliveryPayload({ kind: 'sms', payload: '{"text":"Code 1234","maskedText":"Code ***"}' }),
    ).toEqual({ kind: 'sms', maskedText: 'Code ***' });
  });

  it('reads missing fields as empty', () => {
    expect(parseDeliveryPayload({ kind: 'push', payload: '{}' })).toEqual({
      kind: 'push',
      title: '',
      body: '',
      data: {},
    });
    expect(parseDeliveryPayload({ kind: 'sms', payload: '{}' })).toEqual({ kind: 'sms', maskedText: '' });
  });
});
