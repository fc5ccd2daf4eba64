import { describe, expect, it } from 'vitest';
import { CSV_HEADER, csvLine, detailJson, toDetail, toSummary } from '../src/routes/api/call-mapping.js';
import type { CallRow } from '../src/store/index.js';

const row: CallRow = {
  id: 7,
  at: Date.UTC(2026, 0, 1, 0, 0, 0, 123),
  group_name: 'NotificationNotes',
  operation: 'SendNotificationType',
  binding: 'soap11',
  caller_ip: '203.0.113.7',
  user_agent: 'agent "quoted", with a comma',
  params: '{"id":"=HYPERLINK(\\"x\\")"}',
  phone: null,
  outcome: 'client-error',
  status: 400,
  error: '@SUM(A1)',
  duration_ms: 1.23456,
  request: 'POST /NotificationNotes.asmx HTTP/1.1\r\n\r\n<x/>',
  request_bytes: 41,
  response: 'HTTP/1.1 500',
  response_bytes: 12,
  note: null,
  request_id: '0b7e4f1c-2d3a-4c5b-9e6f-7a8b9c0d1e2f',
  school_id: null,
};

describe('a call as JSON and CSV', () => {
  it('shows a summary without the raw messages, and a detail with them', () => {
    const summary = toSummary(row);
    expect(summary).toEqual({
      id: 7,
      at: '2026-01-01T00:00:00.123Z',
      group: 'NotificationNotes',
      operation: 'SendNotificationType',
      binding: 'soap11',
      callerIp: '203.0.113.7',
      userAgent: 'agent "quoted", with a comma',
      params: { id: '=HYPERLINK("x")' },
      outcome: 'client-error',
      status: 400,
      error: '@SUM(A1)',
      durationMs: 1.235,
      note: null,
      requestId: '0b7e4f1c-2d3a-4c5b-9e6f-7a8b9c0d1e2f',
    });
    expect(toDetail(row)).toEqual({
      ...summary,
      request: row.request,
      requestBytes: 41,
      response: row.response,
      responseBytes: 12,
    });
  });

  it('exports the same detail as JSON text, and null parameters as null', () => {
    expect(JSON.parse(detailJson(row))).toEqual(toDetail(row));
    const none = { ...row, params: null, request_id: null };
    expect(JSON.parse(detailJson(none))).toEqual(toDetail(none));
    expect(toDetail(none).requestId).toBeNull();
  });

  it('exports CSV cells quoted where needed and guarded against formulas', () => {
    expect(CSV_HEADER).toBe(
      'id,at,group,operation,binding,callerIp,userAgent,params,outcome,status,error,durationMs\r\n',
    );
    expect(csvLine(row)).toBe(
      '7,2026-01-01T00:00:00.123Z,NotificationNotes,SendNotificationType,soap11,203.0.113.7,' +
        '"agent ""quoted"", with a comma","{""id"":""=HYPERLINK(\\""x\\"")""}",client-error,400,\'@SUM(A1),1.235\r\n',
    );
    expect(csvLine({ ...row, user_agent: null, params: null, error: '=1+1' })).toContain(
      ",,,client-error,400,'=1+1,",
    );
  });
});
