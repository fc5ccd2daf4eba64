import { type FastifyServerOptions, LogController } from 'fastify';
import fp from 'fastify-plugin';
import pretty from 'pino-pretty';

/**
 * How the log is written (LOG_FORMAT): JSON lines for a log collector, readable lines for a
 * person at a terminal. `auto` reads the terminal from stdout.
 */
export type LogFormat = 'json' | 'pretty';

export function logFormat(
  setting: 'auto' | 'json' | 'pretty',
  isTTY = process.stdout.isTTY === true,
): LogFormat {
  if (setting === 'auto') return isTTY ? 'pretty' : 'json';
  return setting;
}

/**
 * The logger's options for `format`: readable lines (time, level, message, then each field on a
 * line of its own; the set-up URL alone on the line after its message, to be copied whole) written
 * synchronously, so that a line is never lost at exit; JSON lines as pino writes them. Either way
 * no line holds a whole phone number (maskPhonesInLogLine).
 */
export function loggerOptions(
  format: LogFormat,
): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  // Every line, whoever wrote it and whatever it holds, with its phone numbers masked
  // (maskPhonesInLogLine), before it reaches the terminal or a log collector.
  const hooks = { streamWrite: maskPhonesInLogLine };
  if (format === 'json') return { hooks };
  return {
    hooks,
    stream: pretty({
      sync: true,
      colorize: process.stdout.isTTY === true,
      translateTime: 'SYS:HH:MM:ss',
      ignore: 'pid,hostname,setupUrl',
      messageFormat: (log, messageKey) =>
        typeof log.setupUrl === 'string'
          ? `${String(log[messageKey])}\n\n    ${log.setupUrl}\n`
          : String(log[messageKey]),
    }),
  };
}

/**
 * Fastify's log lines, but for its two lines per request (incoming, completed): requestLogPlugin
 * writes one instead. Its error lines stay.
 */
export class RequestLinesOff extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(): void {}
}

/** A request slower than this is worth a line in a person's log (ms). */
export const SLOW_REQUEST_MS = 1000;

/**
 * One line per finished request (Fastify's own two lines per request are off): in JSON mode every
 * request at `info`, for a log collector; in readable mode only what an operator needs at `info`
 * (a server error, a slow request), the rest at `debug` — probes and console assets would bury
 * everything else. Nothing is built for a line the level leaves out (the .asmx path is hot). Being
 * an onResponse hook, it also keeps `reply.elapsedTime` measured, which the call durations and
 * metrics read (Fastify times a reply only for a logger or such a hook).
 */
export const requestLogPlugin = fp<{ readonly format: LogFormat }>(
  async (app, { format }) => {
    app.addHook('onResponse', (request, reply, done) => {
      const ms = reply.elapsedTime;
      const level = format === 'json' || reply.statusCode >= 500 || ms >= SLOW_REQUEST_MS ? 'info' : 'debug';
      const log = request.log as typeof request.log & { isLevelEnabled?: (level: string) => boolean };
      if (log.isLevelEnabled?.(level)) {
        log[level](
          { req: request, res: { statusCode: reply.statusCode }, responseTime: Math.round(ms) },
          'request completed',
        );
      }
      done();
    });
  },
  { name: 'request-log' },
);

/**
 * What a person starting the server at a terminal is told once it listens: where the console and
 * the services are, and where the data is kept (the log's `ready` line says the same as JSON).
 */
export function readyBanner(options: {
  readonly baseUrl: string;
  readonly services: readonly { readonly title: string; readonly path: string }[];
  readonly dataDir: string;
  /** The first admin's set-up URL, while no staff user exists (auth/first-admin.ts). */
  readonly setupUrl?: string | undefined;
}): string {
  const width = Math.max(...options.services.map((s) => s.title.length), 'Console'.length);
  return [
    '',
    'School Messaging and Book Service is ready',
    `  ${'Console'.padEnd(width)}  ${options.baseUrl}/`,
    ...options.services.map((s) => `  ${s.title.padEnd(width)}  ${options.baseUrl}${s.path}`),
    `  ${'Data'.padEnd(width)}  ${options.dataDir}`,
    ...(options.setupUrl
      ? [
          '',
          'No staff user exists yet. Open this link within an hour to create the first admin:',
          `  ${options.setupUrl}`,
        ]
      : []),
    '',
  ].join('\n');
}

// --- phone numbers in the log ------------------------------------------------------------------

/**
 * Country calling codes of one and two digits (ITU-T E.164 assignments); every other code has
 * three. The codes are prefix-free, so a number's first digits say how long its code is
 * (`test/log-phones.test.ts` checks this list against libphonenumber's).
 */
const SHORT_CALLING_CODES = new Set([
  ...'1 7 20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49'.split(' '),
  ...'51 52 53 54 55 56 57 58 60 61 62 63 64 65 66 81 82 84 86 90 91 92 93 94 95 98'.split(' '),
]);

/** How many of an international number's digits are its country calling code. */
export function callingCodeLength(digits: string): number {
  if (SHORT_CALLING_CODES.has(digits.slice(0, 1))) return 1;
  return SHORT_CALLING_CODES.has(digits.slice(0, 2)) ? 2 : 3;
}

/** What stands for each hidden digit of a phone number in the log. */
const PHONE_MASK = '•';

/** Digits shown at a masked number's end. */
const SHOWN_LAST = 3;

/**
 * A phone number as the log shows it: the `+` and country calling code when it is written
 * internationally, its last three digits, and a `•` for every other digit (`+44 7400 123456` →
 * `+44•••••••456`; `07400 123456` → `••••••••456`: a number without its country shows none).
 * The separators go; `prefix` is kept as written (`+`, or `%2B` in a URL).
 */
function maskedNumber(prefix: string, digits: string): string {
  const code = prefix ? callingCodeLength(digits) : 0;
  const hidden = digits.length - code - SHOWN_LAST;
  if (hidden <= 0) return PHONE_MASK.repeat(digits.length);
  return `${prefix}${digits.slice(0, code)}${PHONE_MASK.repeat(hidden)}${digits.slice(-SHOWN_LAST)}`;
}

/**
 * What may stand between a number's digits: spaces, `( ) . / - +` (a `+` is a space in a query
 * string) and their percent-encodings.
 */
const SEPARATOR = String.raw`(?:[ \u00a0\u2009\u202f().\/+\-]|%2[0BbDdEeFf89])`;

/**
 * A run of digits that may be a phone number: 7 to 25 digits, separators between them (at most
 * two together), a `+` (or `%2B`) before them or not, and after them no letter, digit or `_`, nor
 * a `.` or `-` before one (the run would be part of a word or an id). What may come before it is
 * judged by mayStartAt, in code: as a lookbehind, tried at every character, it cost the line
 * several times as much. The one lookbehind here only skips a start inside a run of digits.
 */
const RUN = new RegExp(
  String.raw`(?<!(?<!%[0-9A-Fa-f])\d)(\+|%2[Bb])?(\d(?:${SEPARATOR}{0,2}\d){6,24})(?![\w]|[.\-]\w)`,
  'g',
);

/** Runs that are no phone number: an IPv4 address (`192.168.10.200`)… */
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

/** …or begin with a date (`2026-11-29`, then perhaps a time's hour): the rest is read again. */
const DATE = /^(?:19|20)\d\d-[01]\d-[0-3]\d(?!\d)/;

/** Percent-encoded separators (which hold digits of their own) and everything else not a digit. */
const NOT_DIGITS = /%[0-9A-Fa-f]{2}|\D/g;

const isWord = (c: string | undefined) => c !== undefined && /\w/.test(c);

/** A JSON escape that ends at `at` (`\n`, `\u001b`): what it stands for is no letter. */
const ESCAPE_BEFORE = /\\(?:[nrtbf]|u[0-9A-Fa-f]{4})$/;

/** A percent-encoding of a character that is no letter, digit or `_` (`%20`, `%3A`). */
const ENCODED_SEPARATOR = /^%(?:[01]\w|2\w|3[A-Fa-f]|40|5[B-Eb-e]|60|7[B-Fb-f])$/;

/**
 * Whether a run may start at `at`: at the text's start, or after a character that is no letter,
 * digit, `_`, `.`, `-` or `%` (those make the digits part of a word, an id, an address or an
 * encoding), a `.` or `-` after such a character, a JSON escape, or a percent-encoded character
 * that is no letter or digit.
 */
function mayStartAt(text: string, at: number): boolean {
  if (at === 0) return true;
  const c = text[at - 1] as string;
  if (c === '%') return false;
  if (c === '.' || c === '-') return at === 1 || (!isWord(text[at - 2]) && text[at - 2] !== '%');
  if (!isWord(c)) return true;
  return (
    ESCAPE_BEFORE.test(text.slice(Math.max(0, at - 6), at)) || ENCODED_SEPARATOR.test(text.slice(at - 3, at))
  );
}

/**
 * Where a JSON line's strings are, read once from its start as far as asked: whether a place is
 * inside one. Outside them a value starts only after `:`, `,` or `[` (pino writes no spaces),
 * perhaps with a `-`; anything else before a place is a string's text, known without reading.
 */
class JsonStrings {
  #read = 0;
  #inString = false;
  constructor(readonly line: string) {}

  has(at: number): boolean {
    const { line } = this;
    let before = at - 1;
    if (line[before] === '-') before--;
    const c = line[before];
    if (c !== ':' && c !== ',' && c !== '[') return true;
    // A number after a key (`"time":1795922032375`).
    if (c === ':' && line[before - 1] === '"' && line[before - 2] !== '\\') return false;
    for (; this.#read < at; this.#read++) {
      const ch = line[this.#read];
      if (!this.#inString) this.#inString = ch === '"';
      else if (ch === '\\') this.#read++;
      else if (ch === '"') this.#inString = false;
    }
    return this.#inString;
  }
}

/**
 * `text` with every run of digits that looks like a phone number masked as maskedNumber does.
 * With `json` (a log line), only runs inside its strings: its numbers (the time, a delivery's id)
 * stay, and the line stays JSON. Linear: each run is tried once, the line's strings read once.
 */
function maskRuns(text: string, json: boolean): string {
  RUN.lastIndex = 0;
  let out = '';
  let copied = 0;
  let strings: JsonStrings | undefined;
  for (let m = RUN.exec(text); m !== null; m = RUN.exec(text)) {
    const at = m.index;
    const prefix = m[1] ?? '';
    const body = m[2] as string;
    if (!mayStartAt(text, at)) {
      // The digits belong to what is before them; a run may still start further on (after the
      // `+`, after a percent-encoding's two digits, after the first group of digits).
      RUN.lastIndex = at + 1;
      continue;
    }
    if (json) {
      strings ??= new JsonStrings(text);
      if (!strings.has(at)) continue;
    }
    if (IPV4.test(body)) continue;
    if (!prefix && DATE.test(body)) {
      RUN.lastIndex = at + 10;
      continue;
    }
    out += text.slice(copied, at) + maskedNumber(prefix, body.replace(NOT_DIGITS, ''));
    copied = at + m[0].length;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Free text (a URL, a message, an error) with every run of digits that looks like a phone number
 * masked as maskedNumber does. Whatever is no date or IPv4 address and has seven digits or more
 * in a row (separators allowed) is taken for a number, an id of seven digits in a URL included;
 * a run inside a word or an id (`a1234567`, the `-426614174000` of a UUID) is not a number anyone
 * typed.
 */
export function maskPhonesInText(text: string): string {
  return maskRuns(text, false);
}

/**
 * A log line (pino's JSON) with the phone numbers in its strings masked (maskPhonesInText): keys,
 * messages, URLs, errors and their stacks, whatever field they are in. Numbers (the time, a
 * delivery's id) are not strings and stay as they are, so the line stays JSON.
 */
export function maskPhonesInLogLine(line: string): string {
  return maskRuns(line, true);
}
