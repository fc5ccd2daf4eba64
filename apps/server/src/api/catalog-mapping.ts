import type { Attempt, Book, Delivery, School, Template } from '@school/contract';
import type { AttemptRow, BookRow, DeliveryRow, SchoolRow, TemplateRow } from '../store/index.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(Number(ms)).toISOString());

export function toDelivery(row: DeliveryRow): Delivery {
  const payload = JSON.parse(row.payload) as Record<string, unknown>;
  const sms = row.kind === 'sms';
  return {
    id: row.id,
    callId: row.call_id,
    kind: row.kind,
    provider: row.provider,
    recipient: row.recipient,
    title: sms ? null : String(payload.title ?? ''),
    // Never the clear SMS text: it holds the auth code until the delivery settles.
    text: sms ? String(payload.maskedText ?? '') : String(payload.body ?? ''),
    data: sms ? null : ((payload.data ?? {}) as Record<string, string>),
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.status === 'pending' ? iso(row.next_attempt_at) : null,
    expiresAt: iso(row.expires_at),
    providerId: row.provider_id,
    providerStatus: row.provider_status,
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
    topic: `school-${row.topic_key}`,
    allowedIps: row.allowed_ips ? row.allowed_ips.split(',').filter(Boolean) : [],
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

export function toBook(row: BookRow, baseUrl: string): Book {
  const query = new URLSearchParams({ termId: row.term_id, srid: '', classId: row.class_id });
  return {
    id: row.id,
    termId: row.term_id,
    classId: row.class_id,
    sha256: row.sha256,
    size: Number(row.size),
    filename: row.filename,
    uploadedAt: iso(row.uploaded_at) as string,
    url: `${baseUrl}/BookPdf.asmx/GetBookPdfByTerm?${query}`,
  };
}
