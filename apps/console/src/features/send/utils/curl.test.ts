import { execFileSync } from 'node:child_process';
import { samples } from '@school/asmx/samples';
import { operationByName } from '@school/contract';
import { describe, expect, it } from 'vitest';
import { shellQuote, toCurl } from './curl';

describe('toCurl', () => {
  const op = operationByName('SendNotificationType');
  if (!op) throw new Error('no SendNotificationType');
  const all = samples(op, {
    groupPath: '/NotificationNotes.asmx',
    namespace: 'http://tempuri.org/',
    host: 'h:3000',
    values: { id: "it's 1", baseUrlSchool: 'https://s/', TypeNotfication: 'homework' },
  });

  it('sends the SOAP body as bytes with its headers, quoting for the shell', () => {
    const curl = toCurl(all.soap11, 'http://h:3000');
    expect(curl).toContain("curl -i 'http://h:3000/NotificationNotes.asmx'");
    expect(curl).toContain(`-H 'SOAPAction: "http://tempuri.org/SendNotificationType"'`);
    expect(curl).toContain("-H 'Content-Type: text/xml; charset=utf-8'");
    expect(curl).not.toContain('Content-Length');
    expect(curl).toContain(`--data-binary ${shellQuote(all.soap11.body)}`);
    expect(curl).toContain('<id>it&#39;s 1</id>');
  });

  it('quotes so that a POSIX shell gives back the exact text', () => {
    const text = `it's "quoted" $HOME \\ \`cmd\`\nnext line`;
    expect(execFileSync('sh', ['-c', `printf %s ${shellQuote(text)}`], { encoding: 'utf8' })).toBe(text);
  });

  it('puts HTTP GET parameters in the URL and sends no body', () => {
    expect(toCurl(all['http-get'], 'http://h:3000')).toBe(
      "curl -i 'http://h:3000/NotificationNotes.asmx/SendNotificationType?id=it's%201&baseUrlSchool=https%3A%2F%2Fs%2F&TypeNotfication=homework'".replace(
        "it's",
        "it'\\''s",
      ),
    );
  });
});
