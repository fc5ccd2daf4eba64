import { BlockList, isIP } from 'node:net';

/** A test of caller addresses against IPs and CIDR ranges (IPv4-mapped IPv6 read as IPv4). */
export function ipAllowList(ranges: readonly string[]): (ip: string) => boolean {
  const list = new BlockList();
  for (const entry of ranges) {
    const [address = '', prefix] = entry.split('/');
    const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return (callerIp) => {
    const ip = callerIp.startsWith('::ffff:') && isIP(callerIp.slice(7)) === 4 ? callerIp.slice(7) : callerIp;
    const family = isIP(ip);
    return family !== 0 && list.check(ip, family === 6 ? 'ipv6' : 'ipv4');
  };
}
