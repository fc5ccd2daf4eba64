/**
 * What the dispatcher needs of an SMS or push provider. A provider sends one message and says
 * what came of it; retries, backoff, expiry and bookkeeping are the dispatcher's.
 */

export interface SmsMessage {
  /** E.164, e.g. +447911123456. */
  readonly to: string;
  readonly text: string;
  /** The text with its auth code masked: what a provider may log (the `log` provider does). */
  readonly maskedText?: string;
  /** Stable across retries of the same delivery; sent where the provider supports one. */
  readonly idempotencyKey: string;
}

export interface PushMessage {
  /** The topic name, e.g. `school-3f2a…` or `school-3f2a…-class-7B` (FCM topic charset). */
  readonly topic: string;
  readonly title: string;
  readonly body: string;
  /** String values only (FCM's rule). */
  readonly data: Readonly<Record<string, string>>;
  readonly idempotencyKey: string;
}

export type SendResult =
  | {
      readonly ok: true;
      /** The provider's id for the message (Twilio SID, FCM message name), when it gave one. */
      readonly providerId?: string;
      /** A short, secret-free summary of the provider's answer, for the attempt's record. */
      readonly response: string;
    }
  | {
      readonly ok: false;
      /** transient: worth retrying later; permanent: retrying cannot help. */
      readonly kind: 'transient' | 'permanent';
      /** The provider asked to wait this long (Retry-After, quota) before the next try. */
      readonly retryAfterMs?: number;
      /** What went wrong, in words, secret-free. */
      readonly error: string;
      /** HTTP status, when there was a response. */
      readonly status?: number;
      readonly response?: string;
      /**
       * `no`: the provider surely did not take the message (it answered a refusal, or no connection
       * was made); `unknown` (or absent): it may have (a timeout, a connection lost after the
       * request went out). Only a sure refusal is tried on a fallback at once, since the same
       * idempotency key means nothing to another provider (docs/outbox.md).
       */
      readonly taken?: 'no' | 'unknown';
    };

export interface Provider<M> {
  /** `log`, `twilio`, `http`, `fcm`, `webhook`. */
  readonly name: string;
  /** A short description for the console's Service page, secret-free (e.g. the From number). */
  describe(): string;
  /** Sends one message. Never throws: network errors and timeouts are transient results. */
  send(message: M, signal?: AbortSignal): Promise<SendResult>;
}

export type SmsProvider = Provider<SmsMessage>;
export type PushProvider = Provider<PushMessage>;
