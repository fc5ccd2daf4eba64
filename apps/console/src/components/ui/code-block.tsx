import type { Ref } from 'react';

/**
 * Text as sent or recorded (a request, a response, a curl command) in a box that scrolls when a
 * line is wider than the page or the text taller than the box. The box takes the keyboard's focus
 * so the arrow keys can scroll it (a mouse or a finger is not needed to read the end of a line),
 * and is a region named by its heading or label, so a screen reader says what it holds when it
 * gets there. `wrap`: long lines wrap, and only a long text scrolls.
 */
export function CodeBlock({
  text,
  labelledBy,
  label,
  wrap = false,
  ref,
}: {
  text: string;
  /** The id of the heading that names it. */
  labelledBy?: string;
  /** Its name, when no heading names it. */
  label?: string;
  wrap?: boolean;
  /** The <pre> itself, whose text CopyButton selects where the clipboard cannot be used. */
  ref?: Ref<HTMLPreElement>;
}) {
  return (
    <section
      className={wrap ? 'code code-wrap' : 'code'}
      aria-labelledby={labelledBy}
      aria-label={label}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: a box that scrolls must take focus for the keyboard to scroll it (WCAG 2.1.1).
      tabIndex={0}
    >
      {/* Text only: what was sent or recorded is never rendered as HTML. */}
      <pre ref={ref}>{text}</pre>
    </section>
  );
}
