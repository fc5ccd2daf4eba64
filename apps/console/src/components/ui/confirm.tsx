import { type ReactNode, useEffect, useRef, useState } from 'react';

/**
 * A destructive action in two steps: the button asks, and only "Yes, …" acts. Focus moves to the
 * question's confirm button, and back to the first button on Cancel or Escape.
 */
export function ConfirmButton({
  children,
  question,
  confirmLabel,
  onConfirm,
  pending = false,
}: {
  /** The first button's content, e.g. "Delete" with hidden text naming what. */
  children: ReactNode;
  /** What will happen, as a question: "Delete the book of term 2026-1, class 7B?" */
  question: ReactNode;
  /** The confirming button's text, e.g. "Yes, delete". */
  confirmLabel: string;
  /**
   * Acts. When it returns a promise (a mutation's `mutateAsync`), the question closes once that
   * settles, whatever the outcome (which the caller shows), and the first button gets the keyboard
   * back; otherwise the question stays until the button goes (a deleted row).
   */
  onConfirm: () => unknown;
  pending?: boolean;
}) {
  const { asking, ask, cancel, trigger, confirm } = useConfirmStep();
  const [working, setWorking] = useState(false);

  const act = () => {
    const done = onConfirm();
    if (!(done instanceof Promise)) return;
    setWorking(true);
    done
      .catch(() => {})
      .finally(() => {
        setWorking(false);
        cancel();
      });
  };
  const busy = pending || working;

  if (!asking) {
    return (
      <button ref={trigger} type="button" className="button button-small" onClick={ask}>
        {children}
      </button>
    );
  }
  return (
    <fieldset
      className="confirm"
      onKeyDown={(event) => {
        if (event.key === 'Escape') cancel();
      }}
    >
      <legend className="confirm-question">{question}</legend>
      <button
        ref={confirm}
        type="button"
        className="button button-small button-danger"
        onClick={act}
        disabled={busy}
      >
        {busy ? 'Working…' : confirmLabel}
      </button>
      <button type="button" className="button button-small" onClick={cancel} disabled={busy}>
        Cancel
      </button>
    </fieldset>
  );
}

/**
 * The two steps' state, for a component that draws its own question (ConfirmButton; the privacy
 * page's erasure, which explains at length): whether the question is asked, and the refs of the
 * first button and the confirming one. Focus moves to the confirming button when asked and back
 * to the first button on cancel.
 */
export function useConfirmStep() {
  const [asking, setAsking] = useState(false);
  const trigger = useRef<HTMLButtonElement>(null);
  const confirm = useRef<HTMLButtonElement>(null);
  const returnFocus = useRef(false);

  useEffect(() => {
    if (asking) confirm.current?.focus();
    else if (returnFocus.current) {
      returnFocus.current = false;
      trigger.current?.focus();
    }
  }, [asking]);

  const ask = () => setAsking(true);
  const cancel = () => {
    returnFocus.current = true;
    setAsking(false);
  };
  return { asking, ask, cancel, trigger, confirm };
}
