/**
 * Request headers kept in a call record, enough to replay the call and nothing secret: each by its
 * name as Node has it and as the record writes it.
 */
const RECORDED_HEADERS = ['host', 'content-type', 'content-length', 'soapaction', 'expect', 'user-agent'].map(
  (name) => [name, canonical(name)] as const,
);

export function formatRequest(
  method: string,
  url: string,
  httpVersion: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  body: string,
): string {
  let text = `${method} ${url} HTTP/${httpVersion}`;
  for (const [name, written] of RECORDED_HEADERS) {
    const value = headers[name];
    if (value !== undefined) text += `\r\n${written}: ${Array.isArray(value) ? value.join(', ') : value}`;
  }
  return `${text}\r\n\r\n${body}`;
}

export function formatResponse(
  status: number,
  headers: Readonly<Record<string, string>>,
  body: string,
): string {
  let text = `HTTP/1.1 ${status}`;
  for (const [name, value] of Object.entries(headers)) text += `\r\n${canonical(name)}: ${value}`;
  return `${text}\r\n\r\n${body}`;
}

function canonical(name: string): string {
  return name === 'soapaction'
    ? 'SOAPAction'
    : name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

/** Cuts text to at most `maxBytes` of UTF-8, marking the cut. */
export function capText(text: string, maxBytes: number): { text: string; bytes: number } {
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return { text, bytes };
  const cut = Buffer.from(text).subarray(0, maxBytes).toString('utf8');
  return { text: `${cut}\n…[truncated: ${bytes - maxBytes} more bytes]`, bytes };
}
