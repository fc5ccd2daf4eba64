/** The default SMS text (docs/configuration.md#providers). */
export const DEFAULT_SMS_TEMPLATE = 'Your verification code is {code}';

/**
 * The SMS text for an auth code: every `{code}` in the template replaced by the code. The
 * replacement is literal (a `$` in the code is not a pattern) and made in one pass.
 */
export function renderSmsText(template: string, code: string): string {
  return template.replace(/\{code\}/g, () => code);
}
