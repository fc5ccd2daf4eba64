/**
 * The curl commands of a Markdown `sh` block, read as a POSIX shell and curl would read them, so a
 * test can send exactly the request a reader who pastes them sends. Only the options the README's
 * examples use are known; any other is an error, so a new example cannot be skipped unread.
 */
export interface CurlRequest {
  /** The command as printed, for messages. */
  readonly text: string;
  readonly method: string;
  readonly url: URL;
  /** Header lines as given with -H, in order, then the ones curl adds (Host, Content-Type). */
  readonly headers: Record<string, string>;
  readonly body: string | undefined;
}

/** The commands of every ```sh block under the heading `heading` (a line) of a Markdown text. */
export function curlCommandsUnder(markdown: string, heading: string): CurlRequest[] {
  const lines = markdown.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`no heading ${heading}`);
  const blocks: string[] = [];
  let block: string[] | undefined;
  for (const line of lines.slice(start + 1)) {
    if (block) {
      if (line.startsWith('```')) {
        blocks.push(block.join('\n'));
        block = undefined;
      } else block.push(line);
    } else if (line === '```sh') block = [];
    else if (/^#{1,6} /.test(line)) break; // the next heading: a shell comment is inside a block
  }
  return blocks.flatMap(commandsOf).map(parseCurl);
}

/** A shell script's commands: continuation lines joined, comments and blank lines dropped. */
function commandsOf(script: string): string[] {
  return script
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** A command's words as a POSIX shell splits them: single quotes literal, double quotes with `\`. */
function words(command: string): string[] {
  const out: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i] as string;
    if (c === ' ' || c === '\t') {
      if (word !== undefined) out.push(word);
      word = undefined;
    } else if (c === "'") {
      const end = command.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unclosed ' in ${command}`);
      word = (word ?? '') + command.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let text = '';
      for (i++; command[i] !== '"'; i++) {
        if (i >= command.length) throw new Error(`unclosed " in ${command}`);
        if (command[i] === '\\' && '$`"\\'.includes(command[i + 1] ?? '')) i++;
        text += command[i];
      }
      word = (word ?? '') + text;
    } else if (c === '\\') {
      word = (word ?? '') + (command[++i] ?? '');
    } else if ('$`|;&<>(){}*?'.includes(c)) {
      throw new Error(`shell syntax this reader does not take (${c}) in ${command}`);
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== undefined) out.push(word);
  return out;
}

function parseCurl(text: string): CurlRequest {
  const [program, ...args] = words(text);
  if (program !== 'curl') throw new Error(`not a curl command: ${text}`);
  const headers: Record<string, string> = {};
  let method: string | undefined;
  let url: URL | undefined;
  let body: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const value = () => {
      const v = args[++i];
      if (v === undefined) throw new Error(`${arg} without a value in ${text}`);
      return v;
    };
    if (/^-[si]+$/.test(arg)) continue; // silent, include the answer's headers: the request is the same
    if (arg === '-H') {
      const line = value();
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    } else if (arg === '-X') method = value();
    else if (arg === '--data' || arg === '-d' || arg === '--data-binary') {
      const data = value();
      if (data.startsWith('@')) throw new Error(`a body from a file is not read: ${text}`);
      body = data;
    } else if (arg.startsWith('-')) throw new Error(`curl option ${arg} is not known here: ${text}`);
    else url = new URL(arg);
  }
  if (!url) throw new Error(`no URL in ${text}`);
  // What curl adds: the Host of the URL; with --data, POST and a form's type unless one was given.
  headers.host ??= url.host;
  if (body !== undefined) headers['content-type'] ??= 'application/x-www-form-urlencoded';
  return { text, method: method ?? (body !== undefined ? 'POST' : 'GET'), url, headers, body };
}
