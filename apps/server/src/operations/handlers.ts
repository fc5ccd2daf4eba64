import { fillTemplate, MASK, type OperationName, type ParamsOf } from '@school/contract';
import type { AuthCodeLimits } from '../limits/authcode.js';
import type { SmsDestinations } from '../limits/sms-destinations.js';
import type { Store } from '../store/index.js';
import { findSchoolFor, type SchoolLookup } from './schools.js';

import { classTopic, schoolTopic } from './topics.js';
import type { CallContext, OperationOutcome } from './types.js';

export interface HandlerDeps {
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
  /** Where AuthCode may send an SMS: countries and kinds of number (SMS pumping). */
  readonly destinations: Pick<SmsDestinations, 'check'>;
  /** An AuthCode refused for where it would have gone or how often (the metric). */
  readonly onCodeRefused: (reason: CodeRefusal) => void;
  /** How many pushes are pending. */
  readonly pendingPushes: () => Promise<number>;
  /** Makes every pending push due now and wakes the dispatcher. */
  readonly dispatchPushesNow: () => void;
}

/** What one operation does with its validated parameters (typed from the operation table). */
export type OperationHandler<Name extends OperationName> = (
  values: ParamsOf<Name>,
  context: CallContext,
) => Promise<OperationOutcome>;

/**
 * One handler per operation, keyed by the table's names: an operation without a handler, or a
 * handler reading a parameter the table does not have, is a compile error.
 */
export type OperationHandlers = { readonly [Name in OperationName]: OperationHandler<Name> };

const refusal = (found: Extract<SchoolLookup, { ok: false }>): OperationOutcome => ({
  outcome: 'client-error',
  status: found.status,
  message: found.message,
  ...(found.param ? { param: found.param } : {}),
});

/** Why a code was not sent: its destination, or one of the rate limits. */
export type CodeRefusal = 'country' | 'number-type' | 'range' | 'phone' | 'caller' | 'country-rate';

const LIMIT_REFUSALS: Readonly<Record<string, CodeRefusal>> = {
  'authcode-phone': 'phone',
  'authcode-ip': 'caller',
  'authcode-country': 'country-rate',
  'authcode-range': 'range',
};

export function createOperationHandlers(deps: HandlerDeps): OperationHandlers {
  const { store } = deps;

  /** A push to one of a school's topics, titled and worded from the template for `type`. */
  async function push(
    what: { readonly type: string; readonly baseUrlSchool: string; readonly fill: Record<string, string> },
    context: CallContext,
    topic: (school: Parameters<typeof schoolTopic>[0]) => string,
    data: Readonly<Record<string, string>>,
    describe: string,
  ): Promise<OperationOutcome> {
    const found = await findSchoolFor(store, what.baseUrlSchool, context);
    if (!found.ok) return refusal(found);
    const { school } = found;
    const template = await store.templates.forType(what.type);
    const fill = { ...what.fill, type: what.type, school: school.name };
    const title = fillTemplate(template?.title ?? 'New notification', fill);
    const body = fillTemplate(template?.body ?? '', fill);
    const recipient = topic(school);
    return {
      outcome: 'ok',
      deliveries: [{ kind: 'push', provider: deps.pushProvider, recipient, payload: { title, body, data } }],
      note: `Push queued to ${recipient} for ${describe}.`,
    };
  }

  return {
    async AuthCode({ code, phone }, context) {
      // Where it would go first: a refused destination takes no slot of any limit.
      const destination = deps.destinations.check(phone);
      if (!destination.ok) {
        deps.onCodeRefused(destination.reason);
        return {
          outcome: 'client-error',
          status: 400,
          param: 'phone',
          message: `Invalid phone: ${destination.message}`,
        };
      }
      const slot = await deps.limits.take(phone, context.callerIp, context.staff);
      if (!slot.ok) {
        deps.onCodeRefused(LIMIT_REFUSALS[slot.dimension] ?? 'phone');
        return { outcome: 'client-error', status: 429, retryAfter: slot.retryAfter, message: slot.message };
      }
      return {
        outcome: 'ok',
        deliveries: [
          {
            kind: 'sms',
            provider: deps.smsProvider,
            recipient: phone,
            payload: {
              text: fillTemplate(deps.smsTemplate, { code }),
              maskedText: fillTemplate(deps.smsTemplate, { code: MASK }),
            },
            expiresAt: Date.now() + deps.authCodeTtlMs,
          },
        ],
        note: `SMS queued to ${phone}.`,
      };
    },

    async GetBookPdfByTerm({ termId, classId }) {
      const book = await store.books.find(termId, classId);
      if (!book) {
        return {
          outcome: 'client-error',
          status: 404,
          message: `No book exists for term '${termId}' and class '${classId}'.`,
        };
      }
      return { outcome: 'ok', book, note: `Book ${book.filename} (${book.size} bytes).` };
    },

    SendNotificationType({ id, baseUrlSchool, TypeNotfication }, context) {
      return push(
        { type: TypeNotfication, baseUrlSchool, fill: { id, baseUrlSchool, TypeNotfication } },
        context,
        schoolTopic,
        { type: TypeNotfication, id, baseUrlSchool },
        `type '${TypeNotfication}'`,
      );
    },

    SendMarkNotes({ id, id_class, baseUrlSchool }, context) {
      return push(
        { type: 'marks', baseUrlSchool, fill: { id, id_class, baseUrlSchool } },
        context,
        (school) => classTopic(school, id_class),
        { id, id_class, baseUrlSchool },
        'marks',
      );
    },

    async pushNoti() {
      // Counted now, dispatched once the call is committed: a call that could not be recorded
      // has done nothing.
      const count = await deps.pendingPushes();
      return {
        outcome: 'ok',
        note: `Dispatched ${count} pending push${count === 1 ? '' : 'es'}.`,
        afterCommit: deps.dispatchPushesNow,
      };
    },
  };
}
