// Zip files written byte by byte, so a test can send what no well-behaved zip library writes: a
// name with `..` in it, an entry whose headers hide how far it inflates.
import { crc32, deflateRawSync } from 'node:zlib';

export interface ZipEntry {
  /** Written as it is, in the local header and the central directory. */
  name: string;
  data: Buffer | string;
  /** Unix mode (type and permission bits); default a regular file, 0644. */
  mode?: number;
}

/** A zip (deflated entries, UTF-8 names, made on Unix) of `entries`. */
export function zipOf(entries: readonly ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const data = Buffer.isBuffer(entry.data) ? entry.data : Buffer.from(entry.data);
    const packed = deflateRawSync(data);
    const name = Buffer.from(entry.name, 'utf8');
    const crc = crc32(data);
    // The fields both headers share (version needed, flags: UTF-8 names, deflate, time, date, CRC,
    // sizes, name length), at the local header's offset 4 and the central directory's offset 6.
    const shared = Buffer.alloc(24);
    shared.writeUInt16LE(20, 0);
    shared.writeUInt16LE(0x0800, 2);
    shared.writeUInt16LE(8, 4);
    shared.writeUInt16LE(0, 6);
    shared.writeUInt16LE(0x21, 8);
    shared.writeUInt32LE(crc, 10);
    shared.writeUInt32LE(packed.byteLength, 14);
    shared.writeUInt32LE(data.byteLength, 18);
    shared.writeUInt16LE(name.byteLength, 22);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    shared.copy(local, 4);
    const head = Buffer.alloc(46);
    head.writeUInt32LE(0x02014b50, 0);
    head.writeUInt16LE((3 << 8) | 20, 4);
    shared.copy(head, 6);
    head.writeUInt32LE(((entry.mode ?? 0o100644) << 16) >>> 0, 38);
    head.writeUInt32LE(offset, 42);
    locals.push(local, name, packed);
    central.push(head, name);
    offset += local.byteLength + name.byteLength + packed.byteLength;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.byteLength, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** A SKILL.md with front matter. */
export function skillMd(name: string, description: string, instructions = '# Steps\nRun scripts/run.sh.'): string {
  return `---\nname: ${name}\ndescription: ${description}\n---\n${instructions}\n`;
}
