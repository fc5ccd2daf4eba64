import type { ReactNode } from 'react';

/** The Live button of a list that follows new data, with what it is doing in words beside it. */
export function LiveToggle({
  live,
  onToggle,
  title,
  status,
}: {
  live: boolean;
  onToggle: () => void;
  /** What Live does, on hover. */
  title: string;
  /** Said (politely) to screen readers as it changes. */
  status: ReactNode;
}) {
  return (
    <>
      <button type="button" className="button" aria-pressed={live} onClick={onToggle} title={title}>
        Live
      </button>
      <span className="live-status" role="status">
        {status}
      </span>
    </>
  );
}
