import { type RefObject, useEffect, useRef, useState } from 'react';

type State = 'idle' | 'copied' | 'manual';

/**
 * Copies `text` with the Clipboard API. Where there is none (the console opened over plain HTTP
 * on another host), it selects `target`'s text instead and says to press Ctrl+C.
 */
export function CopyButton({
  text,
  label = 'Copy',
  target,
}: {
  text: string;
  /** The button's text, e.g. "Copy request". */
  label?: string;
  target?: RefObject<HTMLElement | null>;
}) {
  const [state, setState] = useState<State>('idle');
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);

  const show = (next: State) => {
    setState(next);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => setState('idle'), 3000);
  };

  const copy = async () => {
    try {
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(text);
      show('copied');
    } catch {
      const element = target?.current;
      if (element) window.getSelection()?.selectAllChildren(element);
      show('manual');
    }
  };

  return (
    <span className="copy">
      <button type="button" className="button button-small" onClick={copy}>
        {label}
      </button>
      <span className="copy-status" role="status">
        {state === 'copied' ? 'Copied.' : state === 'manual' ? 'Selected: press Ctrl+C to copy.' : ''}
      </span>
    </span>
  );
}
