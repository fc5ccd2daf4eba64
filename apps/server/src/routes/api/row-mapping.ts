import {
  type Attempt,
  type Book,
  type Delivery,
  findGroup,
  operationByName,
  type ParamsOf,
  type School,
  type Template,
} from '@school/contract';
import { allowedRanges } from '../../operations/schools.js';
import { schoolTopic } from '../../operations/topics.js';
import {
  type AttemptRow,
  type DeliveryRow,
  deliveryState,
  parseDeliveryPayload,
} from '../../outbox/index.js';
import type { BookRow, SchoolRow, TemplateRow } from '../../store/index.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(Number(ms)).toISOString());

export function toDelivery(row: DeliveryRow): Delivery {
  const payload = parseDeliveryPayload(row);
  const sms = payload.kind === 'sms';
  return {
    id: row.id,
    callId: row.call_id,
    kind: payload.kind,
    provider: row.provider,
    recipient: row.recipient,
    title: sms ? null : payload.title,
    // Never the clear SMS text: it holds the auth code until the delivery settles.
    text: sms ? payload.maskedText : payload.body,
    data: sms ? null : payload.data,
    status: deliveryState(row),
    attempts: row.attempts,
    nextAttemptAt: row.status === 'pending' ? iso(row.next_attempt_at) : null,
    expiresAt: iso(row.expires_at),
    providerId: row.provider_id,
    providerStatus: row.provider_status,
    unsureProvider: row.unsure_provider,
    lastError: row.last_error,
    createdAt: iso(row.created_at) as string,
    updatedAt: iso(row.updated_at) as string,
    sentAt: iso(row.sent_at),
  };
}

export function toAttempt(row: AttemptRow): Attempt {
  return {
    id: row.id,
    startedAt: iso(row.started_at) as string,
    finishedAt: iso(row.finished_at),
    provider: row.provider,
    outcome: row.outcome,
    status: row.status,
    error: row.error,
    response: row.response,
    retryAfterMs: row.retry_after_ms,
  };
}

export function toSchool(row: SchoolRow): School {
  return {
    id: row.id,
    name: row.name,
    baseUrl: row.base_url,
    topicKey: row.topic_key,
    topic: schoolTopic(row),
    allowedIps: allowedRanges(row),
    createdAt: iso(row.created_at) as string,
    updatedAt: iso(row.updated_at) as string,
  };
}

export function toTemplate(row: TemplateRow): Template {
  return {
    id: row.id,
    type: row.type,
    title: row.title,
    body: row.body,
    updatedAt: iso(row.updated_at) as string,
  };
}

/** The operation apps fetch books with: its HTTP GET path and its parameters, from the table. */
const bookOperation = (() => {
  const op = operationByName('GetBookPdfByTerm');
  const group = op && findGroup(op.group);
  if (!op || !group) throw new Error('The operation table has no GetBookPdfByTerm.');
  return { path: `${group.path}/${op.name}`, params: op.params.map((p) => p.name) };
})();

/** The book's URL over HTTP GET: its term and class, every other parameter empty. */
function bookUrl(row: BookRow, baseUrl: string): string {
  const values: Partial<ParamsOf<'GetBookPdfByTerm'>> = { termId: row.term_id, classId: row.class_id };
  const query = new URLSearchParams(
    bookOperation.params.map((name): [string, string] => [name, values[name as keyof typeof values] ?? '']),
  );
  return `${baseUrl}${bookOperation.path}?${query}`;
}

export function toBook(row: BookRow, baseUrl: string): Book {
  return {
    id: row.id,
    termId: row.term_id,
    classId: row.class_id,
    sha256: row.sha256,
    size: Number(row.size),
    filename: row.filename,
    uploadedAt: iso(row.uploaded_at) as string,
    url: bookUrl(row, baseUrl),
  };
}
