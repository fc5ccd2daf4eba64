import { describe, expect, it } from 'vitest';
import { createAuditFold, FOLD_WINDOW_MS, type FoldedRow } from '../src/auth/audit-fold.js';

describe('refusals folded for the audit log', () => {
  it('writes the first refusal of an address at once and the rest of its window as one row with their count', () => {
    let now = Date.parse('2026-11-27T10:00:00.000Z');
    const rows: FoldedRow[] = [];
    const fold = createAuditFold(
      (row) => rows.push(row),
      () => now,
    );
    fold.refused('203.0.113.9', { reason: 'state mismatch' });
    for (let i = 0; i < 299; i++) {
      now += 100;
      fold.refused('203.0.113.9', { reason: 'state mismatch' });
    }
    fold.refused('198.51.100.7', { reason: 'no flow' });
    expect(rows).toEqual([
      { ip: '203.0.113.9', details: { reason: 'state mismatch' } },
      { ip: '198.51.100.7', details: { reason: 'no flow' } },
    ]);
    now += FOLD_WINDOW_MS;
    fold.flush();
    expect(rows.slice(2)).toEqual([
      {
        ip: '203.0.113.9',
        details: {
          reason: 'repeated refusals',
          count: 299,
          since: '2026-11-27T10:00:00.000Z',
          until: '2026-11-27T10:00:29.900Z',
          lastReason: 'state mismatch',
        },
      },
    ]);
    // A new window starts with a row of its own.
    fold.refused('203.0.113.9', { reason: 'state mismatch' });
    expect(rows).toHaveLength(4);
  });

  it('writes at most 100 first rows a window however many addresses, the rest counted in one row', () => {
    const rows: FoldedRow[] = [];
    const fold = createAuditFold((row) => rows.push(row));
    for (let i = 0; i < 5000; i++) fold.refused(`2001:db8::${i.toString(16)}`, { reason: 'no flow' });
    expect(rows).toHaveLength(100);
    fold.flush(true);
    expect(rows).toHaveLength(101);
    expect(rows[100]).toMatchObject({ ip: null, details: { reason: 'repeated refusals', count: 4900 } });
  });
});
