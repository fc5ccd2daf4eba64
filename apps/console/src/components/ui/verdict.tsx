import type { CallVerdict, VerdictTone } from '@school/contract';

/** A shape beside the colour, so that the tone is read without telling colours apart. */
const ICONS: Record<VerdictTone, string> = { ok: '✓', pending: '…', warn: '!', error: '✕' };

/** A call's one verdict (packages/contract/src/verdict.ts) in a badge of its tone. */
export function VerdictBadge({ verdict }: { verdict: CallVerdict }) {
  return (
    <span className={`badge verdict verdict-${verdict.tone}`}>
      <span className="verdict-icon" aria-hidden="true">
        {ICONS[verdict.tone]}
      </span>{' '}
      {verdict.text}
    </span>
  );
}
