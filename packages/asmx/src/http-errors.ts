/**
 * The HTTP GET and HTTP POST bindings' error answers as ASMX wrote them
 * (`HttpServerProtocol.WriteException`, docs/faults.md#http-get-and-http-post-errors): status
 * `500`, `text/plain; charset=utf-8`, the exception's message HTML-encoded, then CRLF.
 */

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * Encodes text as .NET Framework 4's `HttpUtility.HtmlEncode` did: the five markup characters
 * (`'` as `&#39;`), and U+00A0 to U+00FF as decimal character references. Anything else is left
 * as it is.
 */
export function htmlEncode(text: string): string {
  return text.replace(/[&<>"'\u00a0-\u00ff]/g, (ch) => HTML_ESCAPES[ch] ?? `&#${ch.charCodeAt(0)};`);
}

/** The body of an HTTP GET/POST error: ASMX's `StreamWriter.WriteLine` ended it with CRLF. */
export function httpErrorBody(text: string): string {
  return `${text}\r\n`;
}

/** `{name} Web Service method name is not valid.` (Res.WebInvalidMethodName), encoded. */
export function invalidMethodNameText(name: string): string {
  return htmlEncode(`${name} Web Service method name is not valid.`);
}

/**
 * The name differs from an operation's only in case (Res.WebInvalidMethodNameCase, thrown as an
 * ArgumentException for `methodName`, whose message adds the parameter's name on a line of its
 * own). The spacing, two spaces after the comma and three after the first full stop, is the
 * resource text's own.
 */
export function methodNameCaseText(name: string, operation: string): string {
  return htmlEncode(
    `Invalid method name '${name}',  method names are case sensitive.   The method name '${operation}' with the same name but different casing was found.\r\nParameter name: methodName`,
  );
}

/** An HTTP POST body that is not form-encoded (Res.WebInvalidRequestFormatDetails), encoded. */
export function requestFormatText(contentType: string): string {
  return htmlEncode(`Request format is invalid: ${contentType}.`);
}
