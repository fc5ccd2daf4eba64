/**
 * A provider's failure as staff would say it, from the error the server recorded (its texts are
 * made in the server's providers/: "SMS gateway refused the message: Account suspended (HTTP
 * 403)"): who failed, how, and the provider's own reason, quoted, first; the HTTP status only when
 * the provider gave no reason. A text of no known shape is given as recorded.
 */

/** What each provider is called in a sentence, by the words its errors start with. */
const WHO: readonly [RegExp, string][] = [
  [/^SMS gateway\b/, 'The SMS gateway'],
  [/^Push webhook\b/, 'The push relay'],
  [/^Twilio\b/, 'Twilio'],
  [/^FCM\b/, 'Firebase Cloud Messaging'],
];

const quoted = (reason: string): string => `“${reason.replace(/[.\s]+$/, '')}”`;

export function plainFailure(error: string): string {
  const who = WHO.find(([pattern]) => pattern.test(error))?.[1];
  if (!who) return error;

  // "<who> refused the message: <reason> (HTTP 403)", "<who> temporarily unavailable (HTTP 503)"
  const answered =
    /^(?:SMS gateway|Push webhook) (refused the (?:message|push)|temporarily unavailable)(?:: (.+))? \(HTTP (\d+)\)$/s.exec(
      error,
    );
  if (answered) {
    const [, how = '', reason, status] = answered;
    const did = how.startsWith('refused') ? 'refused it' : 'was unavailable';
    return reason ? `${who} ${did}: ${quoted(reason)}` : `${who} ${did} and gave no reason (HTTP ${status})`;
  }

  // "Twilio error 21610: Attempt to send to unsubscribed recipient (HTTP 400)"
  const twilio = /^Twilio error(?: (\d+))?(?:: (.+))? \(HTTP (\d+)\)$/s.exec(error);
  if (twilio) {
    const [, code, meaning, status] = twilio;
    if (meaning) return `Twilio refused it: ${quoted(meaning)}${code ? ` (error ${code})` : ''}`;
    return `Twilio refused it${code ? ` with error ${code}` : ''} and gave no reason (HTTP ${status})`;
  }

  // "FCM error UNREGISTERED: Requested entity was not found. (HTTP 404)", and its credentials and quota
  if (/^FCM refused the credentials/.test(error))
    return 'Firebase Cloud Messaging refused the service account: check its key and project';
  if (/^FCM quota exceeded/.test(error)) return "Firebase Cloud Messaging's sending quota is used up for now";
  const fcm = /^FCM error(?: [A-Z_]+)?(?:: (.+))? \(HTTP (\d+)\)$/s.exec(error);
  if (fcm) {
    const [, detail, status] = fcm;
    return detail
      ? `${who} refused it: ${quoted(detail)}`
      : `${who} refused it and gave no reason (HTTP ${status})`;
  }

  // "<who>: connection refused (ECONNREFUSED)", "<who>: network error: …"
  const network =
    /^[^:]+: (connection refused|connection reset|host not found|host name lookup failed|connection timed out|host unreachable|network unreachable|network error)/.exec(
      error,
    );
  if (network) return `${who} could not be reached: ${network[1]}`;
  // "<who>: no answer within 10000 ms": it may or may not have taken the message.
  const silent = /^[^:]+: no answer within (\d+) ms$/.exec(error);
  if (silent) return `${who} did not answer within ${Number(silent[1]) / 1000} s`;
  return error;
}
