import { describe, expect, it } from 'vitest';
import { retryDeadMessage, retryDeadProgress } from './retry-dead-progress';

const counts = { pending: 3, sending: 0, sent: 120, logged: 0, dead: 2, expired: 4 };

describe('what came of a "Retry all dead", from the counts', () => {
  it('is waiting until one moves, then says how many are sent and how many failed again', () => {
    const waiting = retryDeadProgress(counts, 2, { ...counts, dead: 0, pending: 5 });
    expect(retryDeadMessage(2, waiting, undefined)).toEqual({
      text: '2 retried: waiting to be sent…',
      tone: 'pending',
    });
    const half = retryDeadProgress(counts, 2, { ...counts, dead: 0, pending: 4, sent: 121 });
    expect(retryDeadMessage(2, half, undefined).text).toBe('2 retried: 1 sent, 1 on their way…');
    const done = retryDeadProgress(counts, 2, { ...counts, dead: 1, sent: 121 });
    expect(retryDeadMessage(2, done, undefined)).toEqual({
      text: '2 retried: 1 sent, 1 failed again.',
      tone: 'error',
    });
    const sent = retryDeadProgress(counts, 2, { ...counts, dead: 0, sent: 122 });
    expect(retryDeadMessage(2, sent, undefined)).toEqual({
      text: '2 retried: 2 sent.',
      tone: 'ok',
    });
  });

  it('never counts more than were retried, whatever else is sent or dies meanwhile', () => {
    const busy = retryDeadProgress(counts, 2, { ...counts, dead: 5, sent: 300 });
    expect(busy).toEqual({ dead: 2, sent: 0, expired: 0, onTheirWay: 0 });
  });
});
