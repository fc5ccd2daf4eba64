import { findGroup } from '@school/contract';

const ASMX_PATH = /^\/([^/?#]+)\.asmx(?=[/?#]|$)/i;

/**
 * IIS matched `.asmx` paths case-insensitively (docs/wire-contract.md#paths-and-methods):
 * `/authcodesending.ASMX` is rewritten to the group's own spelling before routing. The operation
 * name after it is left as sent, because ASMX matched that case-sensitively.
 */
export function canonicalAsmxUrl(url: string): string {
  const match = ASMX_PATH.exec(url);
  if (!match) return url;
  const group = findGroup(match[1] ?? '');
  if (!group || match[0] === group.path) return url;
  return group.path + url.slice(match[0].length);
}
