import { describe, expect, it } from 'vitest';
import { formatTable, jsonText } from '../../../src/cli/output.ts';
import { unknownSettingWarnings } from '../../../src/config/settings.ts';
import { controlCharacterProblem, escapeTerminalText } from '../../../src/contract/terminalText.ts';

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding raw controls is the point
const RAW_CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding raw controls is the point
const RAW_CONTROL_BUT_LF = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe('LEAK-3 (W7): terminal controls are shown as escapes', () => {
  it('LEAK-3 (W7): ESC/OSC, CR, LF, TAB, DEL, C1 (CSI U+009B) and bidi overrides become visible escapes; printable text is unchanged', () => {
    expect(escapeTerminalText('a\u001b]52;c;cHduZWQ=\u0007b')).toBe('a\\x1b]52;c;cHduZWQ=\\x07b');
    expect(escapeTerminalText('x\u001b[2K\rfake\nrow\tcol\u007f')).toBe('x\\x1b[2K\\rfake\\nrow\\tcol\\x7f');
    expect(escapeTerminalText('\u009b31m\u202Eevil\u2066\u200F')).toBe('\\x9b31m\\u{202E}evil\\u{2066}\\u{200F}');
    expect(escapeTerminalText('café 🚀 dlv_01J9 ${TOKEN} \\x1b')).toBe('café 🚀 dlv_01J9 ${TOKEN} \\x1b');
  });

  it('LEAK-3 (W7): JSON for the terminal is the same value, with no raw control left', () => {
    const value = { id: 'op\u001b]0;t\u0007', hook: 'h\u009b\u202E\u2028', n: 1 };
    const text = jsonText(value);
    expect(text).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(text)).toEqual(value);
  });

  it('LEAK-3 (W7): table cells are escaped before the columns are aligned', () => {
    const table = formatTable(['ID', 'HOOK'], [['dlv_1', 'crm\u001b[2K\rdlv_2  delivered']]);
    expect(table).not.toMatch(RAW_CONTROL_BUT_LF);
    expect(table.trimEnd().split('\n')).toHaveLength(2);
    expect(table).toContain('crm\\x1b[2K\\rdlv_2  delivered');
  });

  it('LEAK-3 (W7): the unknown-variable warning shows the name escaped', () => {
    const [line] = unknownSettingWarnings({ 'HOOKRELAY_\u001b]0;x\u0007': '1' });
    expect(line).toBe('HOOKRELAY_\\x1b]0;x\\x07 is not a hookrelay setting and is ignored (docs/configuration.md lists every setting)');
  });

  it('LEAK-3 (W7): an id with a control names the code point and where it is; a printable one passes', () => {
    expect(controlCharacterProblem('op-\u001bx')).toBe(
      "contains a control character (U+001B at index 3); ids are printed on operators' terminals, so they must be printable text",
    );
    expect(controlCharacterProblem('op_01J9:tenant.a-b ü')).toBeUndefined();
  });
});
