import type { Attempt, PrivacyReport } from '@school/contract';
import type { Findings } from '../../privacy/erasure.js';
import { toAuditEntry } from './audit.js';
import { csvCell, toDetail } from './call-mapping.js';
import { toAttempt, toDelivery } from './row-mapping.js';

/** What is held about a number (privacy/erasure.ts findHeld) as the API and `pnpm admin` give it. */
export function toPrivacyReport(findings: Findings, now: number): PrivacyReport {
  const attempts = new Map<number, Attempt[]>();
  for (const row of findings.attempts) {
    const list = attempts.get(row.delivery_id) ?? [];
    list.push(toAttempt(row));
    attempts.set(row.delivery_id, list);
  }
  return {
    phone: findings.forms.e164,
    forms: [...findings.forms.forms],
    generatedAt: new Date(now).toISOString(),
    calls: findings.calls.map(({ row, heldIn }) => ({ ...toDetail(row), heldIn })),
    deliveries: findings.deliveries.map((row) => ({
      ...toDelivery(row),
      attemptLog: attempts.get(row.id) ?? [],
    })),
    audit: findings.audit.map(toAuditEntry),
    limitSlots: findings.limitSlots,
  };
}

const CSV_COLUMNS = ['record', 'id', 'callId', 'deliveryId', 'at', 'what', 'status', 'detail'] as const;

/**
 * The report as CSV, one row per thing held: the number itself first (its spellings, the limit
 * slots), then each call, delivery, attempt and audit entry, with what it holds in `detail` as
 * JSON. Text cells are quoted and guarded against formulas, as History's export's are.
 */
export function privacyReportCsv(report: PrivacyReport): string {
  const lines: string[] = [CSV_COLUMNS.join(',')];
  const row = (cells: readonly (string | number | null)[]) =>
    lines.push(cells.map((c) => (typeof c === 'number' ? String(c) : csvCell(c))).join(','));
  const json = (value: unknown) => JSON.stringify(value);
  row([
    'number',
    null,
    null,
    null,
    report.generatedAt,
    report.phone,
    `limit slots: ${report.limitSlots}`,
    json({ forms: report.forms }),
  ]);
  for (const c of report.calls) {
    const { id, at, operation, binding, outcome, status, ...rest } = c;
    row([
      'call',
      id,
      id,
      null,
      at,
      `${operation ?? '(unknown)'} over ${binding}`,
      `${outcome} ${status}`,
      json(rest),
    ]);
  }
  for (const d of report.deliveries) {
    const { id, callId, createdAt, kind, recipient, provider, status, attemptLog, ...rest } = d;
    row([
      'delivery',
      id,
      callId,
      null,
      createdAt,
      `${kind} to ${recipient} via ${provider}`,
      status,
      json(rest),
    ]);
    for (const a of attemptLog) {
      const { id: attemptId, startedAt, provider: attemptProvider, outcome, status: code, ...more } = a;
      row([
        'attempt',
        attemptId,
        callId,
        id,
        startedAt,
        attemptProvider ?? provider,
        [outcome ?? 'under way', code].filter((v) => v !== null).join(' '),
        json(more),
      ]);
    }
  }
  for (const e of report.audit) {
    const { id, at, action, username, ...rest } = e;
    row(['audit', id, null, null, at, action, username, json(rest)]);
  }
  return `${lines.join('\r\n')}\r\n`;
}
