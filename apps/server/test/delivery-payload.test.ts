import { describe, expect, it } from 'vitest';
import { deliveryPayloadJson, parseDeliveryPayload } from '../src/store/index.js';

describe('delivery payloads', () => {
  it('reads and writes each kind, the kind kept in the row, not the JSON', () => {
    const sms = deliveryPayloadJson({ kind: 'sms', text: 'Code 1234', maskedText: 'Code ***' });
    expect(sms).toBe('{"text":"Code 1234","maskedText":"Code ***"}');
    expect(parseDeliveryPayload({ kind: 'sms', payload: sms })).toEqual({
      kind: 'sms',
      text: 'Code 1234',
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

  it('keeps only the masked text of a settled SMS', () => {
    const settled = deliveryPayloadJson({ kind: 'sms', maskedText: 'Code ***' });
    expect(settled).toBe('{"maskedText":"Code ***"}');
    expect(parseDeliveryPayload({ kind: 'sms', payload: settled })).toEqual({
      kind: 'sms',
      maskedText: 'Code ***',
    });
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
