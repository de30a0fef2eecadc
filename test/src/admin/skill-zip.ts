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
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6);
    local.writeUInt16LE(8, 8);
    local.writeUInt16LE(0, 10);
    local.writeUInt16LE(0x21, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.byteLength, 18);
    local.writeUInt32LE(data.byteLength, 22);
    local.writeUInt16LE(name.byteLength, 26);
    local.writeUInt16LE(0, 28);
    const head = Buffer.alloc(46);
    head.writeUInt32LE(0x02014b50, 0);
    head.writeUInt16LE((3 << 8) | 20, 4);
    head.writeUInt16LE(20, 6);
    head.writeUInt16LE(0x0800, 8);
    head.writeUInt16LE(8, 10);
    head.writeUInt16LE(0, 12);
    head.writeUInt16LE(0x21, 14);
    head.writeUInt32LE(crc, 16);
    head.writeUInt32LE(packed.byteLength, 20);
    head.writeUInt32LE(data.byteLength, 24);
    head.writeUInt16LE(name.byteLength, 28);
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
