import { BlockList, isIP } from 'node:net';
import {
  countryCallingCode,
  MASK,
  type OperationDef,
  type ValidateOptions,
  validateParams,
} from '@school/contract';
import type { BookRow, NewDelivery, SchoolRow, Store } from '../store/index.js';

/** What an operation made of a call, before any binding turns it into a wire response. */
export type OperationResult =
  | {
      readonly outcome: 'ok';
      readonly values: Readonly<Record<string, string>>;
      /** Deliveries to queue, committed with the call record (the outbox). */
      readonly deliveries?: readonly NewDelivery[];
      /** What was done, in words, for the call record. */
      readonly note?: string;
      /** GetBookPdfByTerm: the book found, for the HTTP bindings to serve. */
      readonly book?: BookRow;
      /** What to start once the call record is committed (pushNoti's dispatch), never before. */
      readonly afterCommit?: () => void;
    }
  | {
      readonly outcome: 'client-error';
      /** The HTTP status the HTTP bindings answer with (asmx-compat.md §4). */
      readonly status: 400 | 403 | 404 | 429;
      readonly message: string;
      /** The parameter at fault, when one is. */
      readonly param?: string;
      /** Normalised values, when the input was valid and the operation itself refused. */
      readonly values?: Readonly<Record<string, string>>;
      /** Rate limited: seconds until a call may succeed (the Retry-After header). */
      readonly retryAfter?: number;
    };

export interface RateLimit {
  readonly max: number;
  readonly windowMs: number;
}

function describeWindow(ms: number): string {
  if (ms % 3_600_000 === 0) return ms === 3_600_000 ? 'hour' : `${ms / 3_600_000} hours`;
  if (ms % 60_000 === 0) return ms === 60_000 ? 'minute' : `${ms / 60_000} minutes`;
  return `${Math.round(ms / 1000)} seconds`;
}

export interface CallContext {
  /** The caller's address, for schools restricted to IP ranges. */
  readonly callerIp: string;
}

export interface OperationRunner {
  /**
   * Validates and performs an operation. `read` returns a parameter as the caller sent it, or
   * undefined when absent. The same code serves every binding and the console.
   */
  run(
    op: OperationDef,
    read: (name: string) => string | undefined,
    context: CallContext,
  ): Promise<OperationResult>;
}

export interface OperationRunnerOptions extends ValidateOptions {
  readonly store: Store;
  /** Provider names recorded on queued deliveries. */
  readonly smsProvider: string;
  readonly pushProvider: string;
  /** The SMS text, with `{code}`. */
  readonly smsTemplate: string;
  /** How long an auth code may wait to be sent, in ms. */
  readonly authCodeTtlMs: number;
  /** AuthCode's abuse limits; null: no limit. */
  readonly limits: {
    readonly perPhone: RateLimit | null;
    readonly perIp: RateLimit | null;
    readonly perCountry: RateLimit | null;
  };
  /** How many pushes are pending. */
  readonly pendingPushes: () => number;
  /** Makes every pending push due now and wakes the dispatcher. */
  readonly dispatchPushesNow: () => void;
}

/**
 * A school's base URL as stored: lower-case scheme and host, no default port, no query or
 * fragment, no trailing slash. Undefined when it is not an http(s) URL.
 */
export function normalizeBaseUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

/** Whether a caller may act for a school (its allowed ranges, if any). */
export function callerAllowed(school: SchoolRow, callerIp: string): boolean {
  if (!school.allowed_ips) return true;
  const ip = callerIp.startsWith('::ffff:') && isIP(callerIp.slice(7)) === 4 ? callerIp.slice(7) : callerIp;
  const family = isIP(ip);
  if (family === 0) return false;
  const list = new BlockList();
  for (const entry of school.allowed_ips
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const [address = '', prefix] = entry.split('/');
    const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return list.check(ip, family === 6 ? 'ipv6' : 'ipv4');
}

/** FCM topic names allow `[a-zA-Z0-9-_.~%]`; anything else is percent-encoded. */
const topicPart = (text: string): string =>
  Array.from(new TextEncoder().encode(text), (b) => {
    const ch = String.fromCharCode(b);
    return /[A-Za-z0-9\-_.~]/.test(ch) ? ch : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }).join('');

export const schoolTopic = (school: SchoolRow): string => `school-${school.topic_key}`;
export const classTopic = (school: SchoolRow, classId: string): string =>
  `school-${school.topic_key}-class-${topicPart(classId)}`;

/** `{name}` placeholders filled from `values`; unknown names stay as written. */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{(\w+)\}/g, (all, name: string) =>
    Object.hasOwn(values, name) ? (values[name] ?? '') : all,
  );
}

export function createOperationRunner(options: OperationRunnerOptions): OperationRunner {
  const { store } = options;

  async function schoolFor(
    baseUrlSchool: string,
    context: CallContext,
  ): Promise<{ school: SchoolRow } | { error: OperationResult }> {
    const normalized = normalizeBaseUrl(baseUrlSchool);
    const school = normalized ? await store.schools.findByBaseUrl(normalized) : undefined;
    if (!school) {
      return {
        error: {
          outcome: 'client-error',
          status: 400,
          param: 'baseUrlSchool',
          message: `Unknown school: ${baseUrlSchool.slice(0, 200)}. Register it in the console.`,
        },
      };
    }
    if (!callerAllowed(school, context.callerIp)) {
      return {
        error: {
          outcome: 'client-error',
          status: 403,
          message: `Caller ${context.callerIp} is not allowed to send for the school ${school.name}.`,
        },
      };
    }
    return { school };
  }

  /**
   * product.md's abuse limits on auth codes: per phone, per caller and (when set) per country
   * calling code, each `max` codes in a sliding window. Counted from what is committed, so a
   * burst of simultaneous calls can pass a few over the limit: a brake, not an exact quota.
   */
  async function authCodeLimit(
    phone: string,
    callerIp: string,
  ): Promise<Extract<OperationResult, { outcome: 'client-error' }> | undefined> {
    const now = Date.now();
    type Recent = (since: number, max: number) => Promise<number[]>;
    const country = countryCallingCode(phone);
    const checks: [RateLimit | null, Recent, string][] = [
      [options.limits.perPhone, (since, max) => store.deliveries.recentSms(phone, since, max), 'this phone'],
      [
        options.limits.perIp,
        (since, max) => store.calls.recentFrom(callerIp, 'AuthCode', since, max),
        `this caller (${callerIp})`,
      ],
      [
        country ? options.limits.perCountry : null,
        (since, max) => store.deliveries.recentSms(`+${country}`, since, max, true),
        'numbers with this country code',
      ],
    ];
    for (const [limit, recent, who] of checks) {
      if (!limit) continue;
      const times = await recent(now - limit.windowMs, limit.max);
      if (times.length < limit.max) continue;
      const oldest = times[times.length - 1] ?? now;
      const retryAfter = Math.max(1, Math.ceil((oldest + limit.windowMs - now) / 1000));
      return {
        outcome: 'client-error',
        status: 429,
        retryAfter,
        message: `Too many codes for ${who}: at most ${limit.max} per ${describeWindow(limit.windowMs)}. Try again in ${retryAfter} seconds.`,
      };
    }
    return undefined;
  }

  async function push(
    op: OperationDef,
    values: Readonly<Record<string, string>>,
    context: CallContext,
    templateType: string,
    topic: (school: SchoolRow) => string,
    data: Readonly<Record<string, string>>,
  ): Promise<OperationResult> {
    const found = await schoolFor(values.baseUrlSchool ?? '', context);
    if ('error' in found) return { ...found.error, values } as OperationResult;
    const { school } = found;
    const template = await store.templates.forType(templateType);
    const fill = { ...values, type: templateType, school: school.name };
    const title = fillTemplate(template?.title ?? 'New notification', fill);
    const body = fillTemplate(template?.body ?? '', fill);
    const recipient = topic(school);
    return {
      outcome: 'ok',
      values,
      deliveries: [
        { kind: 'push', provider: options.pushProvider, recipient, payload: { title, body, data } },
      ],
      note: `Push queued to ${recipient} for ${op.name === 'SendMarkNotes' ? 'marks' : `type '${templateType}'`}.`,
    };
  }

  return {
    async run(op, read, context) {
      const validated = validateParams(op, read, options);
      if (!validated.ok) {
        return {
          outcome: 'client-error',
          status: 400,
          message: validated.error.message,
          param: validated.error.param,
        };
      }
      const { values } = validated;
      switch (op.name) {
        case 'AuthCode': {
          const limited = await authCodeLimit(values.phone ?? '', context.callerIp);
          if (limited) return { ...limited, values };
          const code = values.code ?? '';
          const text = fillTemplate(options.smsTemplate, { code });
          return {
            outcome: 'ok',
            values,
            deliveries: [
              {
                kind: 'sms',
                provider: options.smsProvider,
                recipient: values.phone ?? '',
                payload: { text, maskedText: fillTemplate(options.smsTemplate, { code: MASK }) },
                expiresAt: Date.now() + options.authCodeTtlMs,
              },
            ],
            note: `SMS queued to ${values.phone}.`,
          };
        }
        case 'GetBookPdfByTerm': {
          const book = await store.books.find(values.termId ?? '', values.classId ?? '');
          if (!book) {
            return {
              outcome: 'client-error',
              status: 404,
              message: `No book exists for term '${values.termId}' and class '${values.classId}'.`,
              values,
            };
          }
          return { outcome: 'ok', values, book, note: `Book ${book.filename} (${book.size} bytes).` };
        }
        case 'SendNotificationType': {
          const type = values.TypeNotfication ?? '';
          return push(op, values, context, type, schoolTopic, {
            type,
            id: values.id ?? '',
            baseUrlSchool: values.baseUrlSchool ?? '',
          });
        }
        case 'SendMarkNotes':
          return push(op, values, context, 'marks', (s) => classTopic(s, values.id_class ?? ''), {
            id: values.id ?? '',
            id_class: values.id_class ?? '',
            baseUrlSchool: values.baseUrlSchool ?? '',
          });
        case 'pushNoti': {
          // Counted now, dispatched once the call is committed: a call that could not be
          // recorded has done nothing.
          const count = options.pendingPushes();
          return {
            outcome: 'ok',
            values,
            note: `Dispatched ${count} pending push${count === 1 ? '' : 'es'}.`,
            afterCommit: options.dispatchPushesNow,
          };
        }
        default:
          return { outcome: 'ok', values };
      }
    },
  };
}
