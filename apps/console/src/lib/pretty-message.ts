/**
 * A small, tolerant XML indenter for showing recorded requests and responses. It works on the
 * text alone (no DOM, nothing is ever parsed into HTML) and copes with what a history record can
 * hold: bodies cut at the size cap, and input that is not XML at all, which comes back as it was.
 */

type Token =
  | { kind: 'open'; text: string }
  | { kind: 'close'; text: string }
  | { kind: 'empty'; text: string }
  | { kind: 'other'; text: string }
  | { kind: 'text'; text: string };

/** Where the tag that starts at `start` ends (index after `>`), skipping `>` inside quotes; -1 if never. */
function tagEnd(xml: string, start: number): number {
  let quote: string | null = null;
  for (let i = start + 1; i < xml.length; i++) {
    const ch = xml[i];
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
    } else if (ch === '>') {
      return i + 1;
    }
  }
  return -1;
}

function tokenize(xml: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < xml.length) {
    if (xml[i] !== '<') {
      const next = xml.indexOf('<', i);
      const end = next === -1 ? xml.length : next;
      tokens.push({ kind: 'text', text: xml.slice(i, end) });
      i = end;
      continue;
    }
    const special = [
      ['<!--', '-->'],
      ['<![CDATA[', ']]>'],
      ['<?', '?>'],
    ].find(([open]) => xml.startsWith(open as string, i));
    if (special) {
      const close = xml.indexOf(special[1] as string, i);
      const end = close === -1 ? xml.length : close + (special[1] as string).length;
      tokens.push({ kind: special[0] === '<![CDATA[' ? 'text' : 'other', text: xml.slice(i, end) });
      i = end;
      continue;
    }
    const end = tagEnd(xml, i);
    if (end === -1) {
      // Cut off inside a tag (the record's size cap): keep the rest as it is.
      tokens.push({ kind: 'other', text: xml.slice(i) });
      break;
    }
    const text = xml.slice(i, end);
    if (text.startsWith('</')) tokens.push({ kind: 'close', text });
    else if (text.startsWith('<!')) tokens.push({ kind: 'other', text });
    else if (text.endsWith('/>')) tokens.push({ kind: 'empty', text });
    else tokens.push({ kind: 'open', text });
    i = end;
  }
  return tokens;
}

/** Whether the text looks like an XML document or fragment. */
export function looksLikeXml(text: string): boolean {
  return /^\s*<[?!A-Za-z_]/.test(text);
}

/** The XML indented by `indent`, one element per line, short text kept beside its element. */
export function prettyXml(xml: string, indent = '  '): string {
  if (!looksLikeXml(xml)) return xml;
  const tokens = tokenize(xml);
  const lines: string[] = [];
  let depth = 0;
  const pad = () => indent.repeat(Math.max(depth, 0));

  for (let t = 0; t < tokens.length; t++) {
    const token = tokens[t] as Token;
    switch (token.kind) {
      case 'text': {
        const text = token.text.trim();
        if (text) lines.push(pad() + text);
        break;
      }
      case 'open': {
        // <a>text</a> stays on one line.
        const next = tokens[t + 1];
        const after = tokens[t + 2];
        if (next?.kind === 'text' && after?.kind === 'close' && !next.text.includes('\n')) {
          lines.push(pad() + token.text + next.text.trim() + after.text);
          t += 2;
        } else if (next?.kind === 'close') {
          lines.push(pad() + token.text + next.text);
          t += 1;
        } else {
          lines.push(pad() + token.text);
          depth++;
        }
        break;
      }
      case 'close':
        depth--;
        lines.push(pad() + token.text);
        break;
      default:
        lines.push(pad() + token.text);
    }
  }
  return lines.join('\n');
}

/** JSON indented, or undefined when the text is not JSON (or was cut at the size cap). */
function prettyJson(text: string): string | undefined {
  if (!/^\s*[[{]/.test(text)) return undefined;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return undefined;
  }
}

/**
 * An HTTP message as recorded ("start line, headers, blank line, body") with its body indented
 * when it is XML (SOAP) or JSON (console calls). Anything else is returned unchanged.
 */
export function prettyHttpMessage(message: string): string {
  const match = /\r?\n\r?\n/.exec(message);
  if (!match) return message;
  const head = message.slice(0, match.index);
  const body = message.slice(match.index + match[0].length);
  const pretty = looksLikeXml(body) ? prettyXml(body) : prettyJson(body);
  return pretty === undefined ? message : `${head}\n\n${pretty}`;
}
