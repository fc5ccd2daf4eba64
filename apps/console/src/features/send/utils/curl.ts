import type { Sample } from '@school/asmx/samples';

/** Quotes a word for POSIX shells: inside single quotes everything is literal but `'` itself. */
export const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * The curl command that sends exactly the sample's request to `origin`. Host and Content-Length
 * are left to curl (it sets both from the URL and the body); the body goes as bytes, newlines kept.
 */
export function toCurl(sample: Sample, origin: string): string {
  const lines = [`curl -i ${shellQuote(origin + sample.path)}`];
  for (const [name, value] of sample.headers) {
    if (name === 'Host' || name === 'Content-Length') continue;
    lines.push(`-H ${shellQuote(`${name}: ${value}`)}`);
  }
  if (sample.method === 'POST') lines.push(`--data-binary ${shellQuote(sample.body)}`);
  return lines.join(' \\\n  ');
}
