import { MASK, type OperationDef, type ValidateOptions, validateParams } from '@school/contract';
import type { AuthCodeLimits } from '../limits/authcode.js';
import { ipAllowList } from '../net/ip-allow-list.js';
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
  /** AuthCode's abuse limits. */
  readonly limits: AuthCodeLimits;
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
  const ranges = school.allowed_ips
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  return ipAllowList(ranges)(callerIp);
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
          const slot = await options.limits.take(values.phone ?? '', context.callerIp);
          if (!slot.ok) {
            return {
              outcome: 'client-error',
              status: 429,
              retryAfter: slot.retryAfter,
              message: slot.message,
              values,
            };
          }
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
