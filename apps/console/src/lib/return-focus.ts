import { type RefObject, useEffect, useRef } from 'react';
import { useLocation } from 'react-router';

/**
 * Back from a record's page to its list (History, Deliveries): the record's page sends the list
 * `returnTo` in the location state, and the list puts the keyboard focus back on that record's
 * link, scrolled into view, as a browser's Back would leave the reader where they were.
 */
export const returnState = (id: number) => ({ returnTo: id });

/** Focuses the link marked `data-record="{id}"` inside `container` once, when the list shows it. */
export function useFocusOnReturn(container: RefObject<HTMLElement | null>): void {
  const location = useLocation();
  const target = (location.state as { returnTo?: unknown } | null)?.returnTo;
  const done = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (typeof target !== 'number' || done.current === location.key) return;
    const link = container.current?.querySelector<HTMLElement>(`[data-record="${target}"]`);
    if (!link) return;
    done.current = location.key;
    link.focus({ preventScroll: true });
    link.scrollIntoView?.({ block: 'center' });
  });
}
