/**
 * Look-alike characters, so a tool named `reаd_file` (Cyrillic а) or `read_fi1e` is seen for the
 * `read_file` it imitates. A compact subset of Unicode's confusables (UTS #39) for the scripts that
 * imitate ASCII names: Cyrillic, Greek, a few Latin variants and Armenian, plus the digit and letter
 * pairs that read alike in most fonts. NFKC already folds fullwidth, mathematical and ligature forms.
 */
import { hiddenKind } from './visible-text.js';

/** Each look-alike and the ASCII letter it passes for. Upper case goes to lower case. */
const LOOK_ALIKES =
  // Cyrillic
  'аa еe ёe ԁd һh іi їi јj кk ӏl оo рp сc ѕs уy ўy хx ԛq ԝw ьb ' +
  'Аa Вb Еe Ёe Кk Мm Нh Оo Рp Сc Ѕs Тt Уy Хx Іi Їi Јj Ԛq Ԝw Ӏl Ԁd Һh ' +
  // Greek
  'αa εe ηn ιi κk νv οo ρp υu χx ωw ϲc ϳj ' +
  'Αa Βb Εe Ζz Ηh Ιi Κk Μm Νn Οo Ρp Τt Υy Χx Ϲc Ϳj ' +
  // Latin variants and Armenian
  'ıi ȷj ɑa ɡg ɩi ʟl ᴀa ᴄc ᴅd ᴇe ᴊj ᴋk ᴍm ᴏo ᴘp ᴛt ᴜu ᴠv ᴡw ᴢz օo ոn սu ցg հh';

const FOLD = new Map<number, string>();
for (const pair of LOOK_ALIKES.split(' ')) {
  const chars = [...pair];
  if (chars.length === 2) FOLD.set(chars[0]!.codePointAt(0)!, chars[1]!);
}

/** Characters that read as one another in a name; each class maps to one representative. */
const SAME_SHAPE: Readonly<Record<string, string>> = { i: 'l', '1': 'l', '|': 'l', '0': 'o' };
const ASCII = /^[\x20-\x7e]*$/;
const ASCII_SAME_SHAPE = /[i1|0]/;
const ASCII_SAME_SHAPE_ALL = /[i1|0]/g;

function isLatin(cp: number): boolean {
  return (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a) || (cp >= 0xc0 && cp <= 0x24f && cp !== 0xd7 && cp !== 0xf7);
}

/**
 * Whether `word` mixes Latin letters with a look-alike from another script, the signature of a
 * homoglyph spoof (a Russian or Greek word on its own is not one).
 */
export function mixesScripts(word: string): boolean {
  let latin = false;
  let lookAlike = false;
  for (const char of word) {
    const cp = char.codePointAt(0)!;
    if (isLatin(cp)) latin = true;
    else if (FOLD.has(cp)) lookAlike = true;
    if (latin && lookAlike) return true;
  }
  return false;
}

/** `text` with each look-alike letter replaced by the ASCII letter it imitates (case is lost). */
export function foldLookAlikes(text: string): string {
  let out = '';
  for (const char of text) out += FOLD.get(char.codePointAt(0)!) ?? char;
  return out;
}

/**
 * What a tool name looks like: NFKC, hidden characters removed, look-alikes folded to ASCII,
 * lower case, then `i l 1 I |` as one shape, `0 O` as another, `rn` as `m` and `vv` as `w`.
 * Two different names with one skeleton are hard to tell apart for a person and a model.
 */
export function nameSkeleton(name: string): string {
  let out: string;
  if (ASCII.test(name)) {
    // Nearly every name: neither NFKC nor the look-alike table can change it.
    out = name.toLowerCase();
    if (ASCII_SAME_SHAPE.test(out)) out = out.replace(ASCII_SAME_SHAPE_ALL, (char) => SAME_SHAPE[char]!);
  } else {
    out = '';
    for (const char of name.normalize('NFKC')) {
      const cp = char.codePointAt(0)!;
      if (hiddenKind(cp) !== undefined) continue;
      const folded = (FOLD.get(cp) ?? char).toLowerCase();
      out += SAME_SHAPE[folded] ?? folded;
    }
  }
  return out.includes('rn') || out.includes('vv') ? out.replaceAll('rn', 'm').replaceAll('vv', 'w') : out;
}
