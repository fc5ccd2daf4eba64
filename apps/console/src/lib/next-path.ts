import { safeNextPath as safeNextPathOf } from '@school/contract';

/** Where to go after logging in (the `next` of /login?next=…), checked against this page's origin. */
export function safeNextPath(next: string | null | undefined, origin = consoleOrigin()): string | null {
  return safeNextPathOf(next, origin);
}

function consoleOrigin(): string {
  return typeof window !== 'undefined' && window.location.origin !== 'null'
    ? window.location.origin
    : 'http://console.invalid';
}
