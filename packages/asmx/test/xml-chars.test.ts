import { findGroup, type GroupDef, type OperationDef, operationByName } from '@school/contract';
import fc from 'fast-check';
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import {
  escapeXml,
  escapeXmlText,
  faultEnvelope,
  findNonXmlChar,
  renderHelpUnknownOperation,
  soapRequestBody,
  toXmlChars,
} from '../src/index.js';

const group = findGroup('AuthCodeSending') as GroupDef;
const authCode = operationByName('AuthCode') as OperationDef;

/** XML 1.0's Char production, code point by code point: the reference the writers are held to. */
function isXmlChars(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) return false;
      i++;
      continue;
    }
    const ok =
      c === 0x9 || c === 0xa || c === 0xd || (c >= 0x20 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd);
    if (!ok) return false;
  }
  return true;
}

/** Any UTF-16 code units: lone surrogates, U+FFFE, U+FFFF and C0 controls come up often. */
const anyText = fc.string({
  unit: fc
    .oneof(
      fc.integer({ min: 0, max: 0x1f }),
      fc.constantFrom(0xd800, 0xdbff, 0xdc00, 0xdfff, 0xfffe, 0xffff, 0xfffd, 0x7f, 0x85),
      fc.integer({ min: 0x20, max: 0x7e }),
      fc.integer({ min: 0, max: 0xffff }),
    )
    .map((c) => String.fromCharCode(c)),
  maxLength: 40,
});

// The writers before characters XML 1.0 does not allow were replaced: ordinary text must come out
// byte for byte as it did.
const OLD: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const oldEscapeXml = (t: string) => t.replace(/[&<>"']/g, (ch) => OLD[ch] ?? ch);
const oldEscapeXmlText = (t: string) => t.replace(/[&<>]/g, (ch) => OLD[ch] ?? ch);

describe('characters XML 1.0 does not allow', () => {
  it('XMLValidator does not reject them, so the writers must', () => {
    // Why this file checks XML 1.0's Char production itself.
    expect(XMLValidator.validate('<a>\u0001\ufffe\ud800</a>')).toBe(true);
  });

  it('are replaced by U+FFFD; TAB, LF, CR, pairs and other characters stay', () => {
    expect(escapeXmlText('a\u0000b\u0008c\u000bd\u000ce\u001ff\ufffeg\uffffh')).toBe(
      'a\ufffdb\ufffdc\ufffdd\ufffde\ufffdf\ufffdg\ufffdh',
    );
    expect(escapeXmlText('x\ud800y\udc00z\udc00\ud800')).toBe('x\ufffdy\ufffdz\ufffd\ufffd');
    expect(escapeXmlText('\t\n\r\u007f\u0085\ufffd\ud83d\ude00é日')).toBe(
      '\t\n\r\u007f\u0085\ufffd\ud83d\ude00é日',
    );
    expect(escapeXml(`<\u0001>"'&\uffff`)).toBe('&lt;\ufffd&gt;&quot;&#39;&amp;\ufffd');
    expect(toXmlChars('a\u0002\ud83d\ude00\ud83d')).toBe('a\ufffd\ud83d\ude00\ufffd');
    expect(findNonXmlChar('ok\ttext')).toBe(-1);
    expect(findNonXmlChar('ok\u0003')).toBe(2);
  });

  it('findNonXmlChar agrees with the Char production', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(findNonXmlChar(text) === -1).toBe(isXmlChars(text));
        expect(isXmlChars(toXmlChars(text))).toBe(true);
      }),
      { seed: 42, numRuns: 2000 },
    );
  });

  it('never reach a fault, a help page or a sample, whatever the text', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        for (const version of ['1.1', '1.2'] as const) {
          const fault = faultEnvelope(version, 'Client', text);
          expect(isXmlChars(fault)).toBe(true);
          expect(XMLValidator.validate(fault)).toBe(true);
        }
        expect(isXmlChars(renderHelpUnknownOperation(group, text))).toBe(true);
        const sample = soapRequestBody('1.1', authCode, text, {
          code: text,
          phone: text,
        });
        expect(isXmlChars(sample)).toBe(true);
        expect(XMLValidator.validate(sample)).toBe(true);
      }),
      { seed: 42, numRuns: 1000 },
    );
  });

  it('ordinary text is written exactly as before', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (raw) => {
        const text = toXmlChars(raw);
        expect(escapeXml(text)).toBe(oldEscapeXml(text));
        expect(escapeXmlText(text)).toBe(oldEscapeXmlText(text));
      }),
      { seed: 42, numRuns: 2000 },
    );
  });
});
