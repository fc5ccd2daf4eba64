import { randomUUID } from 'node:crypto';
import type { Sealer } from '../secrets/sealer.js';
import type { DeliveriesTable, DeliveryKind, DeliveryStatus } from './schema.js';

/** What an SMS delivery keeps in its `payload` column. */
export interface SmsPayload {
  /** The text with the auth code masked: what the console shows. */
  readonly maskedText: string;
}

/**
 * What an operation queues for an SMS: the masked text, and the text to send, which holds the
 * auth code in clear. That text is stored only sealed (the `secret` column, secrets/sealer.ts) and
 * destroyed when the delivery settles.
 */
export interface NewSmsPayload extends SmsPayload {
  readonly text: string;
}

/** What a push delivery carries. */
export interface PushPayload {
  readonly title: string;
  readonly body: string;
  /** String values only (FCM's rule). */
  readonly data: Readonly<Record<string, string>>;
}

/** The payload of each kind of delivery (one entry per DELIVERY_KINDS), as stored. */
export interface PayloadOfKind {
  readonly sms: SmsPayload;
  readonly push: PushPayload;
}

/** The payload of each kind of delivery as an operation queues it. */
export interface NewPayloadOfKind {
  readonly sms: NewSmsPayload;
  readonly push: PushPayload;
}

/** A delivery's payload, told apart by the delivery's kind. */
export type DeliveryPayload = { [K in DeliveryKind]: { readonly kind: K } & PayloadOfKind[K] }[DeliveryKind];

/** A delivery an operation queues; stored with its call, in the same transaction. */
export type NewDelivery = {
  [K in DeliveryKind]: {
    readonly kind: K;
    readonly provider: string;
    readonly recipient: string;
    readonly payload: NewPayloadOfKind[K];
    /** Auth codes: not sent after this (epoch ms). */
    readonly expiresAt?: number;
  };
}[DeliveryKind];

/**
 * The payload stored in a row's `payload` column. The column holds the JSON of the payload
 * without its kind (the row has its own `kind` column): {maskedText} for SMS, {title, body, data}
 * for pushes. An SMS's own text is never in it: it is sealed in the `secret` column.
 */
export function parseDeliveryPayload(row: Pick<DeliveriesTable, 'kind' | 'payload'>): DeliveryPayload {
  const json = JSON.parse(row.payload) as Record<string, unknown>;
  const text = (value: unknown): string => String(value ?? '');
  if (row.kind === 'sms') return { kind: 'sms', maskedText: text(json.maskedText) };
  return {
    kind: 'push',
    title: text(json.title),
    body: text(json.body),
    data: (json.data ?? {}) as Record<string, string>,
  };
}

/** The `payload` column for a payload (see parseDeliveryPayload): an SMS's clear text never. */
export function deliveryPayloadJson(payload: DeliveryPayload): string {
  return payload.kind === 'sms'
    ? JSON.stringify({ maskedText: payload.maskedText })
    : JSON.stringify({ title: payload.title, body: payload.body, data: payload.data });
}

/** The statuses of an SMS that may still be sent (again): only these keep a text to send. */
export const UNSETTLED_SMS = ['pending', 'sending', 'dead'] as const satisfies readonly DeliveryStatus[];

/**
 * An SMS as a release before sealing kept it: its text to send in clear in the `payload` column.
 * Answers the text to seal (only while the SMS may still be sent: a settled one needs none) and
 * the `payload` column without it; undefined when the payload holds no clear text. The server seals
 * such texts at start (sql.ts) and `migrate-data` as it copies them (cli/migrate-data.ts).
 */
export function unsealedText(row: {
  readonly status: string;
  readonly payload: string;
}): { readonly text: string | undefined; readonly payload: string } | undefined {
  const json = JSON.parse(row.payload) as { text?: unknown; maskedText?: unknown };
  if (json.text === undefined) return undefined;
  const unsettled = (UNSETTLED_SMS as readonly string[]).includes(row.status);
  return {
    text: unsettled && typeof json.text === 'string' ? json.text : undefined,
    payload: deliveryPayloadJson({ kind: 'sms', maskedText: String(json.maskedText ?? '') }),
  };
}

/** The stored payload of a delivery to be queued, with its kind: an SMS's masked text alone. */
const payloadOf = (item: NewDelivery): DeliveryPayload =>
  item.kind === 'sms'
    ? { kind: 'sms', maskedText: item.payload.maskedText }
    : { kind: 'push', ...item.payload };

/**
 * A new delivery's idempotency key: a UUID of version 7 (RFC 9562), the time in milliseconds and
 * then 74 random bits. As unique as a random UUID for the providers' deduplication, and ordered by
 * time, so each new key goes at the end of the unique index rather than on a random page of it:
 * with random keys every delivery dirtied a page of that index of its own, which each commit then
 * wrote (bench/commit-batch.mjs; docs/performance.md#what-was-tried).
 */
export function idempotencyKey(now: number): string {
  const time = (Math.max(0, Math.floor(now)) % 2 ** 48).toString(16).padStart(12, '0');
  // A random UUID (version 4) with its first 48 bits replaced by the time and its version digit by
  // 7: its other 74 random bits stay. randomUUID draws from a pool it refills once per 128 UUIDs;
  // randomBytes per key went to the system's generator every time, a call each delivery pays.
  return `${time.slice(0, 8)}-${time.slice(8)}-7${randomUUID().slice(15)}`;
}

/** A delivery as its call's commit inserts it: pending, due now, an SMS's text sealed. */
export interface DeliveryInsert {
  readonly call_id: number;
  /** Its call's school (null: none). */
  readonly school_id: number | null;
  readonly kind: DeliveryKind;
  readonly provider: string;
  readonly recipient: string;
  readonly payload: string;
  readonly secret: string | null;
  readonly status: 'pending';
  readonly attempts: 0;
  readonly next_attempt_at: number;
  readonly lease_until: null;
  readonly leased_by: null;
  readonly expires_at: number | null;
  readonly idempotency_key: string;
  readonly created_at: number;
  readonly updated_at: number;
}

/** The rows a call's deliveries are inserted as: an SMS's text sealed for its idempotency key. */
export function newDeliveryRows(
  callId: number,
  schoolId: number | null,
  items: readonly NewDelivery[],
  now: number,
  sealer: Sealer,
): DeliveryInsert[] {
  return items.map((item) => {
    const key = idempotencyKey(now);
    return {
      call_id: callId,
      school_id: schoolId,
      kind: item.kind,
      provider: item.provider,
      recipient: item.recipient,
      payload: deliveryPayloadJson(payloadOf(item)),
      secret: item.kind === 'sms' ? sealer.seal(item.payload.text, key) : null,
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      lease_until: null,
      leased_by: null,
      expires_at: item.expiresAt ?? null,
      idempotency_key: key,
      created_at: now,
      updated_at: now,
    };
  });
}
