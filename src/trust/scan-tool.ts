/**
 * A scanner for poisoned tool definitions: text in a tool's name, description, title, annotations
 * or schemas that is aimed at the model rather than describing the tool. Pure code, no I/O: the
 * sync from upstream MCP servers and the REST ingestion decide what to do with its findings.
 *
 * How it tells an instruction from a description: a tool may say what it does in any mood ("Read a
 * file", "Sends an email"); a poisoned one addresses the model about things its purpose does not
 * need: hiding, secrets, other tools, addresses to send data to. Rules therefore pair a verb with
 * such an object, and a phrase that is quoted or described ("detects prompts such as 'ignore all
 * previous instructions'") is downgraded one severity instead of being dropped, the way
 * mcpproxy-go classifies the position of a match. Only `high` findings should stop a tool.
 */
import { setImmediate as yieldThread } from 'node:timers/promises';
import { foldLookAlikes, mixesScripts, nameSkeleton } from './confusables.js';
import { escapeLength, hiddenKind, MAYBE_HIDDEN, showInvisible, stripInvisible } from './visible-text.js';

export type Severity = 'high' | 'medium' | 'low';

export interface Finding {
  code: string;
  severity: Severity;
  /** Where: 'name', 'description', 'inputSchema.properties.x.description', 'annotations.title', ... */
  path: string;
  /** At most 120 characters around the match; hidden characters written as escapes (\u200b). */
  excerpt: string;
}

export interface ScannedTool {
  name: string;
  description?: string | null;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
  title?: string;
}

export interface ScanContext {
  /**
   * The other tool names of the same catalog, for look-alike names. An array or set is indexed once
   * and reused while its size holds (pass the same one for a whole batch); a `NameIndex` is used as is.
   */
  otherNames?: Iterable<string>;
  /** Names a tool must not take or imitate: the gateway's meta-tools (reserved-names.ts). */
  reservedNames?: Iterable<string>;
}

/** The closed list of finding codes, each with what it means. */
const CODE_DOCS = {
  invisible_character:
    'zero-width, word-joiner, filler or other invisible format character outside the scripts that need it (high inside a word or three or more in a string, else medium)',
  format_character: 'a rare Unicode format character with a visible use in some scripts (medium)',
  soft_hyphen: 'soft hyphen, invisible in most places and common in copied text (low)',
  bidi_control: 'bidirectional override or isolate (U+202A-202E, U+2066-2069) that reorders what a reviewer sees (high)',
  tag_characters: 'Unicode tag characters (U+E0000-E007F): invisible ASCII, decoded into the excerpt (high)',
  variation_selector_run: 'variation selectors beyond one after a base character, a way to smuggle bytes; decoded when they spell text (high)',
  private_use: 'private-use code points, which carry no meaning a reviewer can see (high)',
  ansi_escape: 'ANSI escape sequence that can hide or rewrite text on a terminal (high)',
  control_character: 'C0/C1 control character other than tab, newline and carriage return (medium; high when backspaces or DELs erase text)',
  mixed_script_word: 'a word mixing Latin letters with Cyrillic or Greek look-alikes, to dodge keyword filters (medium)',
  hidden_instruction_tag:
    'a tag such as <IMPORTANT>, <SYSTEM> or <secret> wrapping directions to the model (high; medium for an <IMPORTANT> note with no directive in it)',
  html_comment: 'an HTML or Markdown comment, invisible when rendered, carrying directions (high) or other text (medium)',
  chat_template_token: 'a chat-template control token such as <|system|>, <|im_start|> or [INST] (high)',
  fake_system_message: 'a forged system or developer message: [SYSTEM: ...], [[[...]]], "### Instruction:", "new system message", developer mode (high)',
  instruction_override: '"ignore / disregard / forget previous instructions" and "follow these new instructions" (high)',
  system_prompt_leak: 'asks the model to reveal its system prompt, hidden instructions or conversation (high)',
  secrecy_instruction: 'tells the model to hide something from the user: "do not tell the user", "without telling them", "present it as if" (high)',
  safety_bypass: 'asks to disable guardrails or safety checks, to trust the tool blindly or to comply with everything (high); grants of full access (medium)',
  preamble_instruction: 'directs the model to do something first: "before using this tool, read ..." (medium)',
  sensitive_file_access:
    'directs the model to read or pass credential files: ~/.ssh, id_rsa, .env, ~/.aws/credentials, mcp.json, /etc/passwd (high; medium when a tool only says it does so)',
  secret_exfiltration: 'asks to send, pass or include secrets (keys, tokens, passwords, private data) in a response, argument or message (high)',
  exfiltration:
    "sends data to an address the tool does not need: a copy, all messages or the user's data to a URL, e-mail or external host, or to an attacker (high)",
  hidden_recipient: 'a blind or carbon copy to a fixed e-mail address (high)',
  embedded_secret: 'a literal credential in the text: AWS key, sk- key, GitHub or Slack token, bearer token, private key block (medium)',
  covert_behavior:
    'undisclosed data handling: shared with third parties, automatic opt-in, harvested credentials (high); marketing lists, retained history (medium)',
  tool_shadowing: 'changes how OTHER tools behave: "when the X tool is invoked, first ...", "replace its output", "route all requests here" (high)',
  tool_reference: 'directs the model to call or prefer another named tool, or claims to supersede one (medium)',
  preemptive_call:
    'pushes the model to choose this tool over all others: "ignore all other tools", "instead of any other tool" (high); "always use this tool first" (medium)',
  preference_manipulation: 'marketing pressure aimed at the model: superlatives, urgency, endorsements, shouting (high when heavy, medium when notable)',
  rug_pull: 'announces a change of behaviour once approved or trusted (high)',
  encoded_payload:
    'a long base64, hex, percent or escape-encoded run that decodes to printable text: high when that text holds an instruction or a shell command, else low',
  response_manipulation:
    'tells the model what to say to the user instead of the result: "instead reply ...", "always say ..." (high; medium for fixed wording)',
  shell_payload: 'a shell download-and-run or reverse shell in plain text (high when addressed to the model, medium when described)',
  decode_instruction: 'asks the model to decode something and then run or follow it (high)',
  combined_signals:
    'two different medium directive findings in one definition (for example a push to call this tool first and a request for the conversation), which one honest description rarely needs (high)',
  reserved_name: "the name equals a reserved name: an agent would read the tool as the gateway's own meta-tool (high)",
  confusable_name: 'the name looks like a different tool or reserved name (same skeleton), or mixes look-alike scripts (high)',
  invalid_name: "the name has characters outside MCP's A-Z a-z 0-9 _ - . / or exceeds 128 characters (medium; high with hidden characters)",
  prototype_name: 'the name is __proto__, constructor or prototype, which corrupts plain-object maps (high)',
  too_large: 'more than MAX_SCAN_CHARS characters of text: the rest was not scanned (low)',
  too_deep: 'schema nesting beyond MAX_SCHEMA_DEPTH: deeper values were not scanned (low)',
} as const satisfies Record<string, string>;

export type ScanCode = keyof typeof CODE_DOCS;
export const SCAN_CODES: readonly string[] = Object.freeze(Object.keys(CODE_DOCS));
export const SCAN_CODE_DOCS: Readonly<Record<ScanCode, string>> = CODE_DOCS;

/** Text scanned per tool: far above any honest definition (the longest real ones are ~10k). */
export const MAX_SCAN_CHARS = 64 * 1024;
/** Schema nesting followed: real schemas stay under 10 levels. */
export const MAX_SCHEMA_DEPTH = 32;
const EXCERPT_CHARS = 120;
/** Matches of one rule examined in one string before giving up (quoted examples come first). */
const MATCHES_PER_RULE = 4;
/** Encoded runs decoded per string: each decode is a copy. */
const ENCODED_RUNS_PER_STRING = 8;
/** Findings kept per tool beyond which only high ones are added: a report, not a dump. */
const MAX_FINDINGS = 256;
/** Tags or comments examined per string: the first ones say enough. */
const STRUCTURES_PER_STRING = 16;
/** Hidden characters examined per string; stripping still removes them all. */
const HIDDEN_PER_STRING = 4096;
/** Phrase rules never match text shorter than this. */
const MIN_PHRASE_TEXT = 10;

export function isFlagged(findings: readonly Finding[]): boolean {
  return findings.some((finding) => finding.severity === 'high');
}

// ---------------------------------------------------------------------------------------------
// Vocabulary shared by the phrase rules. Patterns run on lower-cased text with hidden characters
// removed. Gaps are bounded ({0,n}) so a hostile 64 KiB string costs linear time.
// ---------------------------------------------------------------------------------------------

/** Any character but a sentence end: a dot inside ~/.ssh/id_rsa or evil.com does not end one. */
const GAP = String.raw`(?:[^.!?\n]|[.!?](?=[^\s])|\n(?![ \t]*\n))`;
const gap = (max: number) => `${GAP}{0,${max}}?`;

const SEND_VERB = String.raw`(?:send|sends|sending|sent|forward|forwards|forwarding|forwarded|upload|uploads|uploading|uploaded|post|posts|posting|transmit|transmits|transmitting|transmitted|exfiltrate|exfiltrates|exfiltrating|exfiltrated|leak|leaks|leaking|leaked|relay|relays|relayed|beacon|e-?mail|e-?mails|e-?mailed|copy|copies|copied|sync|syncs|synced|export|exports|exported|push|pushes|pushed|deliver|delivers|delivered|transfer|transfers|transferred|report back|reports back)`;
/** Destinations a tool's own purpose never explains away. */
const HOSTILE_PLACE = String.raw`(?:attacker|adversary|\bevil\b|evil\.|\bc2\b|command[- ]and[- ]control|controlled by (?:the |an? )?(?:attacker|us|me|hacker|third)|webhook\.site|pastebin\.|requestbin|burpcollaborator|interact\.sh|\bexfil)`;
/** An address that is not the user's: a literal URL or e-mail, or an external / third-party one. */
const OUTSIDE_PLACE = String.raw`(?:https?://|ftp://|wss?://|[a-z0-9._%+-]{1,64}@[a-z0-9-]+(?:\.[a-z0-9-]+)+|(?:(?:an?|the|our|my|their|some|this|that)\s+)?(?:external|third[- ]party|outside|off-?site|unknown|hidden|separate|unlisted|attacker'?s?(?:[- ]controlled)?)\s+(?:[\w-]+\s+)?(?:host|server|endpoint|url|address|site|collector|domain|location|machine|inbox|account|e-?mail|webhook|service)|${HOSTILE_PLACE})`;
/** Credential files and stores: naming one in an instruction is never the tool's own business. */
const CREDENTIAL_FILE = String.raw`(?:~/\.ssh|\.ssh/|\bssh id|\bid rsa\b|\bmcp json\b|\benv file\b|\betc passwd\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|~/\.aws|\.aws/credentials|\baws credentials|(?<![\w$])\.env\b|\*\.(?:env|pem|key|p12|pfx)\b|\*(?:credentials|secrets?|passwords?|tokens?)\*|\bmcp\.json|claude_desktop_config|~/\.cursor|\.cursor/|/etc/(?:passwd|shadow|sudoers)|\.netrc\b|\.pgpass\b|\.git-credentials|\.docker/config\.json|\.kube/config|wallet\.dat|\bkeychain\b|\.bash_history|\.zsh_history|\bcredentials\.(?:json|db|ya?ml|txt|csv|xml|ini)\b|\.config/gcloud|application_default_credentials|service[_-]account(?:[_-]key)?\.json|\.azure/|\.gnupg|\.config/gh/hosts|\.pypirc|\.vault-token|\.s3cfg|\bmaster password|\badmin(?:istrator)? password|\broot password|\bprivate keys? files?|\bseed phrase|\bmnemonic phrase|\bbrowser cookies|\bsaved passwords)`;
const SECRET = String.raw`(?:[a-z0-9]+_(?:api_key|secret(?:_key)?|token|password|access_key(?:_id)?)\b|system prompt|credentials?|api[ _-]?keys?|access[ _-]?tokens?|auth(?:entication|orization)?[ _-]?tokens?|bearer tokens?|session (?:tokens?|cookies?)|secret keys?|secrets|passwords?|passphrases?|private[ _-]?keys?|ssh[ _-]?keys?|seed phrases?|environment variables|env vars|private (?:information|data|info|details)|sensitive (?:information|data|info|details)|confidential (?:information|data|info|details|company information)|personal (?:information|data))`;
/** A secret the user is asked for as this tool's own input ("your API key", "the token"): not someone else's. */
const OWN_SECRET = String.raw`(?<!\b(?:your|the|an?|my|our)\s)`;
/** Imperative (base-form) verbs that make the model fetch something. Third-person forms describe the tool. */
const FETCH_IMPERATIVE = String.raw`(?:read|cat|open|access|load|fetch|get|grab|collect|gather|copy|dump|include|pass|attach|upload|send|steal|harvest|extract|retrieve|obtain|look up|print|output|paste|embed|append|exfiltrate|leak|forward|post)`;
const FETCH_DESCRIBED = String.raw`(?:reads|opens|accesses|loads|fetches|gets|grabs|collects|gathers|copies|dumps|includes|passes|attaches|uploads|sends|steals|harvests|extracts|retrieves|obtains|prints|outputs|embeds|appends|exfiltrates|leaks|forwards|posts)`;

interface PhraseRule {
  code: ScanCode;
  severity: Severity;
  /**
   * Trigger words, in groups: the rule runs only when every group has a word in the text (see
   * gateRules). Words are runs of [a-z0-9_]; the characters < [ { # @ * ~ % \ & | count as words.
   * Each group must list a word every match contains, so the gate never costs a finding.
   */
  triggers: readonly (readonly string[])[];
  pattern: RegExp;
  /** Quoted or described matches are downgraded one step (see framingOf). */
  framed: boolean;
}

const rule = (code: ScanCode, severity: Severity, triggers: string, source: string, framed = true): PhraseRule => ({
  code,
  severity,
  triggers: triggers.split(' / ').map((group) => group.trim().split(/\s+/)),
  pattern: new RegExp(source, 'g'),
  framed,
});

const SEND_WORDS =
  'send sends sending sent forward forwards forwarding forwarded upload uploads uploading uploaded post posts posting transmit transmits transmitting transmitted exfiltrate exfiltrates exfiltrating exfiltrated leak leaks leaking leaked relay relays relayed beacon email emails emailed mail mails mailed copy copies copied sync syncs synced export exports exported push pushes pushed deliver delivers delivered transfer transfers transferred report reports';
const OUTSIDE_WORDS =
  'http https ftp ws wss @ external third outside off offsite site unknown hidden separate unlisted attacker attackers adversary evil c2 control controlled webhook pastebin requestbin burpcollaborator interact exfil exfiltrate exfiltrates exfiltrated exfiltrating exfiltration';
const HOSTILE_WORDS =
  'attacker attackers adversary evil c2 control controlled webhook pastebin requestbin burpcollaborator interact exfil exfiltrate exfiltrates exfiltrated exfiltrating exfiltration';
const CREDENTIAL_WORDS =
  'rsa gcloud account service_account azure gnupg gh pypirc vault s3cfg ssh id_rsa id_dsa id_ecdsa id_ed25519 aws env pem key p12 pfx credentials secrets secret passwords password tokens token mcp claude_desktop_config cursor passwd shadow sudoers netrc pgpass git docker kube wallet keychain bash_history zsh_history private seed mnemonic cookies';
const SECRET_WORDS =
  'accesstoken accesstokens authtoken authtokens privatekey privatekeys sshkey sshkeys prompt credential credentials api key keys api_key apikey token tokens access_token bearer session secret secrets password passwords passphrase passphrases private private_key ssh ssh_key seed environment env vars sensitive confidential personal';
const FETCH_WORDS =
  'read cat open access load fetch get grab collect gather copy dump include pass attach upload send steal harvest extract retrieve obtain look print output paste embed append exfiltrate leak forward post';
const FETCHED_WORDS =
  'reads opens accesses loads fetches gets grabs collects gathers copies dumps includes passes attaches uploads sends steals harvests extracts retrieves obtains prints outputs embeds appends exfiltrates leaks forwards posts';
const CHANGE_WORDS = 'replace override overwrite discard ignore alter modify correct fix change rewrite swap falsify';
const RESULT_WORDS = 'output outputs result results response responses answer answers return returned';

const PHRASE_RULES: readonly PhraseRule[] = [
  // --- forged conversation structure -----------------------------------------------------------
  rule(
    'chat_template_token',
    'high',
    '< [',
    String.raw`<\|(?:system|user|assistant|im_start|im_end|endoftext|begin_of_text|start_header_id|end_header_id|eot_id|developer|tool)\|>|\[/?inst\]|<</?sys>>|<(?:start|end)_of_turn>`,
  ),
  rule(
    'fake_system_message',
    'high',
    '[ { / system admin developer assistant instruction instructions override ai model llm',
    String.raw`[\[{]{1,3}\s*(?:system|admin|developer|assistant|instructions?|override|ai|model|llm)(?:\s+(?:message|instructions?|note|prompt|override|command|directive|notice|update))?\s*:`,
  ),
  rule(
    'fake_system_message',
    'high',
    '[ / system instruction instructions important admin note override',
    String.raw`\[\[\[\s*(?:system|instructions?|important|admin|note|override)`,
  ),
  rule(
    'fake_system_message',
    'medium',
    '[ / important critical note',
    String.raw`\[\s*(?:important|critical|note to (?:ai|the ai|assistant|the assistant|model|the model|llm))\s*\]`,
  ),
  rule(
    'fake_system_message',
    'high',
    '# / system instruction instructions admin developer assistant',
    String.raw`#{1,6}\s*(?:new\s+)?(?:system|instructions?|admin|developer|assistant)(?:\s+(?:message|prompt|instructions?|override|update|note))?\s*(?::|#{2,})`,
  ),
  rule(
    'fake_system_message',
    'high',
    'system',
    String.raw`\bnew system (?:message|prompt|instructions?|directive|rules?)\b|\bsystem (?:override|update|notice|prompt)\s*:`,
  ),
  rule(
    'fake_system_message',
    'high',
    'mode',
    String.raw`\b(?:you are now in|you are now|you're now in|enter|entering|enable|enabling|activate|activating|switch(?:ing)? to|now in)\s+(?:\w+\s+)?(?:developer|god|admin|jailbreak|dan|unrestricted|sudo|root|unfiltered|uncensored) mode\b`,
  ),
  rule(
    'fake_system_message',
    'high',
    'now',
    String.raw`\byou(?: are|'re) now (?:a |an )?(?:no longer|free|unrestricted|unfiltered|jailbroken|dan\b|allowed to|authori[sz]ed to|permitted to|in (?:developer|admin|god) mode)`,
  ),
  rule(
    'fake_system_message',
    'high',
    'hidden secret covert invisible confidential',
    String.raw`\b(?:hidden|secret|covert|invisible)\s+(?:directive|instruction|command|task|objective|goal|mission|order)s?\s*:|\bthis is (?:a |an )?(?:secret|confidential|hidden|covert) (?:operation|step|task|instruction|process|action)\b`,
  ),

  // --- overriding what the model was told ------------------------------------------------------
  rule(
    'instruction_override',
    'high',
    'ignore disregard forget override bypass discard abandon',
    String.raw`\b(?:ignore|disregard|forget|override|bypass|discard|abandon)\s+(?:(?:all|any|the|your|these|those|of|my|every|each)\s+)*(?:(?:previous|prior|above|earlier|preceding|initial|original|foregoing|former|existing|system|safety|other|old)\s+)?(?:instructions?|directions?|directives?|commands?|prompts?|rules|guidelines|guidance|constraints|programming|training|system prompt|context)\b`,
  ),
  rule(
    'instruction_override',
    'high',
    'ignore disregard forget',
    String.raw`\b(?:ignore|disregard|forget)\s+(?:(?:all|the|everything|anything|what(?:ever)? (?:was|you were))\s+)*(?:previous(?:ly)?|prior|above|preceding|earlier|foregoing|before|told|said)\b\s*(?:,|;|:|-|\band\b|\bthen\b|\binstead\b|\bnow\b|\.)`,
  ),
  rule(
    'instruction_override',
    'high',
    'void null obsolete cancelled canceled revoked longer superseded',
    String.raw`\b(?:previous|prior|earlier|above|original|all other|your)\s+(?:instructions?|guidance|rules|directions|directives|guidelines|system prompt)\s+(?:are|is)\s+(?:now\s+)?(?:void|null|obsolete|cancell?ed|revoked|superseded|no longer (?:valid|apply|applicable|in effect))\b`,
  ),
  rule(
    'instruction_override',
    'high',
    'override overrides supersede supersedes replace replaces precedence / prompt instructions guidelines rules directives',
    String.raw`\b(?:overrides?|supersedes?|replaces?|takes? precedence over)\s+(?:all\s+|any\s+)?(?:your|the previous|the prior|previous|prior|all other|the system)\s+(?:\w+\s+)?(?:system prompt|instructions|guidelines|rules|directives)\b`,
  ),
  rule(
    'safety_bypass',
    'high',
    'authorized authorised approved allowed permitted consented granted preauthorized preauthorised preapproved / user admin administrator developer operator creator owner',
    String.raw`\b(?:the user|the admin(?:istrator)?|your (?:developer|operator|creator|owner|admin))\s+(?:has|have)\s+(?:already\s+)?(?:pre-?)?(?:authori[sz]ed|approved|allowed|permitted|consented|granted)\s+(?:you|this|it|the assistant|the model)\b`,
  ),
  rule('fake_system_message', 'medium', 'note / assistant ai model llm agent', String.raw`\bnote to (?:the )?(?:assistant|ai|model|llm|agent)\s*:`),
  rule(
    'instruction_override',
    'high',
    'ignore disregard forget / everything anything all',
    String.raw`\b(?:ignore|disregard|forget)\s+(?:everything|anything|all)\s+(?:(?:written|said|stated|listed|you were told|you have been told)\s+)?(?:above|before|previously|prior|so far|until now)\b`,
  ),
  rule(
    'fake_system_message',
    'high',
    'dan unrestricted unfiltered uncensored jailbroken',
    String.raw`\b(?:act as|you are|pretend to be|roleplay as|become)\s+(?:dan\b|an? (?:unrestricted|unfiltered|uncensored|jailbroken) (?:ai|assistant|model|version))`,
  ),
  rule(
    'fake_system_message',
    'high',
    'anthropic openai developer developers creator creators maker makers operator operators',
    String.raw`\b(?:message|instructions?|notice|update|directive|order)s?\s+from\s+(?:anthropic|openai|your (?:developers?|creators?|makers?|operators?))\b`,
  ),
  rule(
    'instruction_override',
    'high',
    'follow your now',
    String.raw`\bfollow (?:these|the following|my|the) new (?:instructions?|ones|rules|directives?)\b|\byour (?:new|real|true|actual) (?:instructions?|task|role|purpose|objective|goal) (?:is|are)\b|\bfrom now on,?\s+(?:you|always|never|ignore|forward|send|respond|reply|act|treat|include|do not|don't)\b`,
  ),

  // --- asking for what the model holds ---------------------------------------------------------
  rule(
    'system_prompt_leak',
    'high',
    'prompt instructions system developer',
    String.raw`(?:\b(?:reveal|print|output|repeat|leak|dump|disclose|expose)\s+(?:(?:me|us|the user|your|the|its|all|full|entire|complete|original|initial|whole|exact|verbatim)\s+)*|\b(?:show|display|share|tell|give|provide|include|pass|copy|write|return|send|add|append|attach|put|paste|insert)\s+(?:(?:me|us|the user|all|full|entire|complete|original|initial|whole|exact|verbatim)\s+)*your\s+(?:(?:full|entire|complete|original|initial|whole|exact)\s+)*)(?:system prompt|system message|initial prompt|hidden instructions|secret instructions|developer (?:message|instructions)|instructions above|previous instructions)\b`,
  ),
  rule(
    'system_prompt_leak',
    'medium',
    'conversation chat history messages context transcript',
    String.raw`\b(?:send|leak|dump|forward|include|pass|add|append|attach|put|paste|insert|upload)\s+(?:(?:the|your|its|all|full|entire|complete|whole|exact|verbatim)\s+)*(?:conversation (?:history|context|so far|transcript|log)|chat (?:history|transcript|log)|previous messages|(?:all )?user messages|context window|transcript)\b|\b(?:full|entire|complete|whole)\s+(?:chat|conversation)\s+(?:transcript|history|log|context)\b`,
  ),
  rule('system_prompt_leak', 'high', 'role / system developer', String.raw`["']role["']\s*:\s*["'](?:system|developer)["']`),

  // --- hiding from the user --------------------------------------------------------------------
  rule(
    'secrecy_instruction',
    'high',
    'not don dont never cannot can cant shouldn shouldnt without / tell telling inform informing notify notifying alert alerting let letting',
    String.raw`\b(?:do not|don'?t|never|must not|should not|shouldn'?t|cannot|can'?t|without)\s+(?:(?:ever|explicitly|directly|actually|even|once)\s+)?(?:tell|telling|inform|informing|notify|notifying|alert|alerting|let|letting)\s+(?:the\s+|your\s+|any\s+)?(?:user|users|them|anyone|human|person|operator|customer|client|him|her)\b`,
  ),
  rule(
    'secrecy_instruction',
    'high',
    'not don dont never / mention reveal disclose acknowledge admit explain say',
    String.raw`\b(?:do not|don'?t|never|must not|should not)\s+(?:(?:explicitly|directly|ever|actually)\s+)?(?:mention|reveal|disclose|acknowledge|admit|explain why|say)\s+(?:(?:this|that|it|these|the fact|anything|to the user|you(?:'re| are)?|why|any of (?:this|these)|what you)\b)`,
  ),
  rule(
    'secrecy_instruction',
    'high',
    'without keep hide conceal pretend act present make know see told notice find',
    String.raw`\bwithout\s+(?:the\s+)?(?:user|users|their|them)(?:'s)?\s+(?:knowing|noticing|knowledge|consent|awareness|being aware|permission|seeing)\b|\b(?:keep|hide|conceal)\s+(?:this|it|that|these|the fact)\s+(?:\w+\s+){0,2}?(?:secret\s+|hidden\s+)?from\s+(?:the\s+)?(?:user|them)\b|\b(?:pretend|act (?:like|as if|as though)|present (?:it|this|them|the \w+) as (?:if|though)|make it (?:look|seem|appear) (?:like|as if))\b|\bthe user (?:must|should) not (?:know|see|be told|notice|find out)\b`,
  ),

  // --- turning safety off ----------------------------------------------------------------------
  rule(
    'safety_bypass',
    'high',
    'disable disabling bypass bypassing turn turning circumvent circumventing deactivate deactivating skip skipping ignore ignoring override overriding suspend suspending lift lifting / guardrail guardrails safety security content ethical moderation',
    String.raw`\b(?:disable|disabling|bypass|bypassing|turn off|turning off|circumvent|circumventing|deactivate|deactivating|skip|skipping|ignore|ignoring|override|overriding|suspend|suspending|lift|lifting)\s+(?:(?:all|any|the|your|its|existing|every)\s+)*(?:guardrails?|safety (?:checks?|filters?|measures|guidelines|policies|protocols|rules|settings|features)|security (?:checks?|controls|filters?|policies|measures|protocols|guardrails?|guidelines)|content (?:filters?|filtering|moderation|polic(?:y|ies))|moderation|ethical (?:guidelines|constraints|rules))\b`,
  ),
  rule(
    'safety_bypass',
    'high',
    'without / safety security',
    String.raw`\bwithout\s+(?:(?:applying|any|performing|running|the|your)\s+)*(?:safety|security)\s+(?:checks?|filters?|guardrails?|restrictions|review|validation|measures)\b`,
  ),
  rule(
    'safety_bypass',
    'high',
    'trust comply obey',
    String.raw`\btrust\s+(?:this\s+(?:tool|server|function)|me|it)\s+(?:completely|fully|implicitly|unconditionally|blindly|absolutely)\b|\b(?:comply|obey)\s+(?:with\s+)?(?:all|any|every)\s+(?:subsequent|following|future|further)?\s*(?:requests?|instructions?|commands?|demands?)\b`,
  ),
  rule(
    'safety_bypass',
    'medium',
    'disable bypass bypassing circumvent turn deactivate remove lift / security safety restrictions protections safeguards',
    String.raw`\b(?:disable|bypass|bypassing|circumvent|turn off|deactivate|remove|lift)\s+(?:(?:all|any|the|your|its)\s+)*(?:security|safety|restrictions|protections|safeguards)\b`,
  ),
  rule(
    'safety_bypass',
    'medium',
    'grant granting give giving elevate escalate / unrestricted full elevated root admin administrator unlimited superuser',
    String.raw`\b(?:grant|granting|give|giving|elevate|escalate)\s+(?:\w+\s+){0,2}?(?:unrestricted|full|elevated|root|admin(?:istrator)?|unlimited|superuser)\s+(?:filesystem\s+|system\s+|network\s+)?(?:access|privileges?|permissions?|rights|control)\b`,
  ),

  // --- directing the model before it acts ------------------------------------------------------
  rule(
    'preamble_instruction',
    'medium',
    'before / using calling invoking running executing answering responding replying providing proceeding doing',
    String.raw`\bbefore\s+(?:using|calling|invoking|running|executing|answering|responding|replying|providing|proceeding|doing anything)\b(?:\s+(?:this|the|any|that|a)\s+(?:\w+\s+)?(?:tool|function|question|request|response|answer|information|task))?\s*,?\s+(?:you\s+(?:must|should|need to|have to)\s+)?(?:always\s+)?(?:first\s+)?(?:read|call|run|use|invoke|fetch|access|send|pass|check|get|open|load|retrieve|include|collect|consult|verify)\b`,
  ),

  // --- credentials ----------------------------------------------------------------------------
  rule(
    'sensitive_file_access',
    'high',
    `${FETCH_WORDS} / ${CREDENTIAL_WORDS}`,
    String.raw`\b${FETCH_IMPERATIVE}\b${gap(60)}(?<!\b(?:to|into|in|under|within|inside)\s+~?/?)${CREDENTIAL_FILE}`,
  ),
  rule(
    'sensitive_file_access',
    'high',
    `and then , / pass send include upload forward attach embed post paste put append add exfiltrate leak / ${CREDENTIAL_WORDS}`,
    String.raw`${CREDENTIAL_FILE}${gap(60)}(?:\band\b|\bthen\b|,)\s+(?:\w+\s+){0,2}?(?:pass|send|include|upload|forward|attach|embed|post|paste|put|append|add|exfiltrate|leak)\b`,
  ),
  rule(
    'sensitive_file_access',
    'high',
    `contents content / ${CREDENTIAL_WORDS}`,
    String.raw`\bcontents?\s+(?:of|from)\s+(?:reading\s+)?(?:the\s+|your\s+|the user'?s\s+)?${gap(20)}${CREDENTIAL_FILE}`,
  ),
  rule(
    'secret_exfiltration',
    'high',
    `put paste place include provide insert add enter fill pass / ${SECRET_WORDS} / here`,
    String.raw`\b(?:put|paste|place|include|provide|insert|add|enter|fill in|pass)\s+${gap(50)}\b${OWN_SECRET}${SECRET}${gap(40)}\bhere\b`,
  ),
  rule(
    'sensitive_file_access',
    'medium',
    `${FETCHED_WORDS} / ${CREDENTIAL_WORDS}`,
    String.raw`\b${FETCH_DESCRIBED}\b${gap(60)}(?<!\b(?:to|into|in|under|within|inside)\s+~?/?)${CREDENTIAL_FILE}`,
  ),
  rule(
    'secret_exfiltration',
    'high',
    `include add insert embed append put present reveal output print write attach place hide encode / ${SECRET_WORDS} / response responses reply answer answers output outputs message messages result results summary text texts comment comments note notes`,
    String.raw`\b(?:include|add|insert|embed|append|put|present|reveal|output|print|write|attach|place|hide|encode)\s+${gap(60)}\b${SECRET}${gap(40)}\b(?:in|into|within|inside|as part of)\s+(?:your|the|each|every)\s+(?:\w+\s+)?(?:response|reply|answer|output|message|result|summary|text|comment|note)s?\b`,
  ),
  rule(
    'secret_exfiltration',
    'high',
    `pass send include put add provide append attach embed / argument parameter field param property input`,
    String.raw`\b(?:pass|send|include|put|add|provide|append|attach|embed)\s+${gap(50)}\b(?:${OWN_SECRET}${SECRET}|(?:its|their|the file'?s?) contents?)${gap(50)}\b(?:as|in|into|to)\s+(?:the\s+)?['"\x60]?\w+['"\x60]?\s*(?:argument|parameter|field|param|property|input)\b`,
  ),
  rule(
    'secret_exfiltration',
    'high',
    `pass send upload leak post forward transmit exfiltrate share expose email mail / ${SECRET_WORDS} / ${OUTSIDE_WORDS}`,
    String.raw`\b(?:pass|send|upload|leak|post|forward|transmit|exfiltrate|share|expose|email|e-mail)\s+${gap(40)}\b${OWN_SECRET}${SECRET}${gap(60)}\b(?:to|into|via|through|at|onto)\s+${gap(30)}${OUTSIDE_PLACE}`,
  ),
  rule('secret_exfiltration', 'high', 'exfiltrate exfiltrates exfiltrated exfiltrating', String.raw`\bexfiltrat(?:e|es|ed|ing)\b`),
  rule(
    'secret_exfiltration',
    'medium',
    'pass send share leak expose reveal / private sensitive confidential personal secret',
    String.raw`\b(?:pass|send|share|leak|expose|reveal)\s+(?:all\s+|any\s+|the\s+|your\s+|their\s+)*(?:private|sensitive|confidential|personal|secret)\s+(?:information|data|info|details)\b`,
  ),
  rule(
    'covert_behavior',
    'high',
    'harvest harvested harvesting harvests',
    String.raw`\bharvest(?:ed|ing|s)?\s+(?:\w+\s+){0,2}?(?:credentials?|passwords?|tokens?|api keys?|secrets?|keys|cookies|sessions?|logins?)\b`,
  ),
  rule(
    'covert_behavior',
    'medium',
    'extract extracts extracting collect collects collecting / api key keys apikeys tokens credentials passwords secrets private',
    String.raw`\b(?:extract|collect)(?:s|ing)?\s+(?:all|any|every)\s+(?:api keys?|apikeys|tokens|credentials|passwords|secrets|private keys)\b`,
  ),
  rule(
    'secret_exfiltration',
    'medium',
    'attach append add include embed insert / them it these those / response reply answer output message comment footer',
    String.raw`\b(?:attach|append|add|include|embed|insert)\s+(?:them|it|these|those)\s+(?:to|in|into|inside)\s+(?:the\s+|your\s+|every\s+|each\s+)?(?:[\w'-]+\s+){0,2}?(?:response|reply|answer|output|message|comment|footer)s?\b`,
  ),
  rule(
    'covert_behavior',
    'medium',
    'harvest harvested harvesting harvests',
    String.raw`\bharvest(?:ed|ing)\s+(?:\w+\s+)?(?:data|emails?|information|pii|phi|records|contacts)\b`,
  ),

  // --- sending data where the tool's purpose does not go ---------------------------------------
  rule('exfiltration', 'high', `${SEND_WORDS} / ${HOSTILE_WORDS}`, String.raw`\b${SEND_VERB}\b${gap(120)}${HOSTILE_PLACE}`),
  rule(
    'exfiltration',
    'high',
    `${SEND_WORDS} / copy copies all every each everything any user users / ${OUTSIDE_WORDS}`,
    String.raw`\b${SEND_VERB}\s+(?:(?:a|an|the)\s+)?(?:copy|copies|all|every|each|everything|any|the user'?s?|users'|user|all of the user'?s?)\b${gap(80)}\b(?:to|into|at|via)\s+${gap(20)}${OUTSIDE_PLACE}`,
  ),
  rule(
    'exfiltration',
    'high',
    `also additionally secretly silently quietly covertly automatically always background / ${SEND_WORDS} / ${OUTSIDE_WORDS}`,
    String.raw`\b(?:also|additionally|secretly|silently|quietly|covertly|automatically|always|in the background)\s+(?:\w+\s+)?${SEND_VERB}\b${gap(80)}\b(?:to|into|at|via)\s+${gap(20)}${OUTSIDE_PLACE}`,
  ),
  rule(
    'exfiltration',
    'high',
    `forward send copy upload relay post bcc cc / messages message emails email mails mail conversations conversation history`,
    String.raw`\b(?:forward|send|copy|upload|relay|post|bcc|cc)\s+(?:(?:all|every|each|the|of the|user'?s?)\s+)*(?:messages?|e-?mails?|conversations?|chat history|conversation history)\b${gap(80)}\b(?:to|into|at|via)\s+${gap(20)}(?:${OUTSIDE_PLACE}|a (?:remote|different|new) (?:server|address|endpoint|url))`,
  ),
  rule(
    'exfiltration',
    'high',
    'http https / { < $ %',
    String.raw`https?://[^\s)"'\x60]{0,200}[?&/=](?:\{\{?|<|\$\{?|%7b)\s*(?:conversation|history|chat|context|messages?|system_prompt|prompt|api_?key|token|secret|password|credentials?|user_?data|user_?info|email|env|data|content|summary|memory)`,
  ),
  rule(
    'hidden_recipient',
    'high',
    'bcc cc blind carbon / @',
    String.raw`\b(?:bcc|cc|blind[- ]copy|carbon[- ]copy)\b${gap(60)}[a-z0-9._%+-]{1,64}@[a-z0-9-]+(?:\.[a-z0-9-]+)+`,
  ),
  rule(
    'hidden_recipient',
    'high',
    'always automatically secretly silently quietly / bcc cc blind send copy forward / @ http https',
    String.raw`\b(?:always|automatically|secretly|silently|quietly)\s+(?:bcc|cc|blind[- ]copy|send a copy|copy|forward)\b${gap(60)}(?:[a-z0-9._%+-]{1,64}@[a-z0-9-]+(?:\.[a-z0-9-]+)+|https?://)`,
  ),

  // --- undisclosed data handling ---------------------------------------------------------------
  rule(
    'covert_behavior',
    'high',
    'shared sold provided disclosed transferred sent forwarded passed given leaked made / third advertisers brokers affiliates marketers partners',
    String.raw`(?<!\b(?:not|never|no|n't|nor|without)\s(?:\w+\s){0,3})\b(?:shared|sold|provided|disclosed|transferred|sent|forwarded|passed|given|leaked|made available)\s+(?:\w+\s+){0,2}?(?:with|to)\s+(?:\w+\s+){0,2}?(?:third[- ]part(?:y|ies)|advertisers|data brokers|affiliates|marketers|partners for)\b`,
  ),
  rule(
    'covert_behavior',
    'high',
    'opt opted opts optin',
    String.raw`\bauto(?:matically)?[\s-]*opt(?:ed|s)?[\s-]*in\b|\bopted[\s-]*in\s+(?:by default|automatically)\b`,
  ),
  rule(
    'covert_behavior',
    'medium',
    'added / marketing mailing advertising newsletter promotional',
    String.raw`\badded to (?:a |an |our |the )?(?:marketing|mailing|advertising|newsletter|promotional) (?:database|list)s?\b`,
  ),
  rule(
    'covert_behavior',
    'medium',
    'location browsing search usage keystroke clipboard / history data activity',
    String.raw`\b(?:location|browsing|search|usage|keystroke|clipboard) (?:history|data|activity) (?:is|are) (?:\w+\s+)?(?:maintained|stored|retained|logged|collected|tracked|recorded|kept|sold)\b`,
  ),
  rule(
    'covert_behavior',
    'medium',
    'our / sent forwarded uploaded shared reported transmitted',
    String.raw`\b(?:are|is)\s+(?:also\s+|automatically\s+|silently\s+)?(?:sent|forwarded|uploaded|shared|reported|transmitted)\s+(?:to|with)\s+our\b`,
  ),

  rule(
    'covert_behavior',
    'high',
    'secretly silently covertly quietly invisibly surreptitiously behind without',
    String.raw`\b(?:secretly|silently|covertly|quietly|invisibly|surreptitiously|behind the scenes|without (?:the )?(?:user'?s?|their) (?:knowledge|consent|awareness))\s*,?\s+(?:also\s+)?(?:send|sends|upload|uploads|log|logs|record|records|collect|collects|copy|copies|transmit|transmits|forward|forwards|store|stores|track|tracks|capture|captures|exfiltrate|exfiltrates|harvest|harvests|monitor|monitors|access|accesses|read|reads|share|shares|save|saves|include|includes|add|adds|append|appends)\b`,
  ),
  rule('covert_behavior', 'medium', 'secretly covertly surreptitiously', String.raw`\b(?:secretly|covertly|surreptitiously)\b`),

  // --- what the model tells the user -----------------------------------------------------------
  rule(
    'response_manipulation',
    'high',
    'instead / reply respond say tell answer',
    String.raw`\binstead\s*,?\s+(?:just\s+)?(?:reply|respond|say|tell the user|answer)\b`,
  ),
  rule(
    'response_manipulation',
    'medium',
    'always must / say respond reply answer end start begin',
    String.raw`\b(?:always|must)\s+(?:say|respond with|reply with|answer with|(?:end|start|begin) (?:your|every|each) (?:response|reply|answer) with)\b`,
  ),
  rule(
    'instruction_override',
    'high',
    'ignore disregard / user input request query question message instructions',
    String.raw`\b(?:ignore|disregard)\s+(?:all\s+|the\s+|any\s+)?(?:user|user's|users')\s+(?:input|inputs|request|requests|query|queries|question|questions|message|messages|instructions?)\b`,
  ),
  rule(
    'safety_bypass',
    'medium',
    'ask asking / confirmation permission approval consent',
    String.raw`\b(?:do not|don'?t|never|without)\s+ask(?:ing)?\s+(?:the\s+)?(?:user|users|them|anyone)\s+(?:for\s+)?(?:confirmation|permission|approval|consent)\b`,
  ),

  // --- other tools -----------------------------------------------------------------------------
  rule(
    'tool_shadowing',
    'high',
    'when whenever / use call invoke run using calling invoking running / tool function',
    String.raw`\bwhen(?:ever)?\s+(?:you\s+|the user\s+|the agent\s+|an? agent\s+)?(?:use|call|invoke|run|using|calling|invoking|running)\s+(?:the\s+|any\s+|a\s+)?['"\x60]?(?!this\b|that\b|same\b|current\b)[\w.-]+['"\x60]?\s+(?:tool|function)\b${gap(120)}\b(?:instead|reroute|redirect|replace|override|overwrite|modify|alter|intercept|swap|hijack|change the|set the|append|also send|also forward|also add|always add|bcc)\b`,
  ),
  rule(
    'tool_shadowing',
    'high',
    'pretend claim masquerade impersonate act / trusted official verified legitimate authorized authorised approved system',
    String.raw`\b(?:pretend|claim|masquerade as|impersonate|act as if you are)\s+(?:to\s+be\s+|you\s+are\s+|being\s+)?(?:the\s+)?(?:trusted|official|verified|legitimate|authori[sz]ed|approved|system)\s+(?:[\w.-]+\s+){0,3}?(?:tool|server|function|service)\b`,
  ),
  rule(
    'tool_shadowing',
    'high',
    'when whenever if each every any after / tool function',
    String.raw`\b(?:when(?:ever)?|if|each time|every time|any time|after)\s+(?:the\s+|any\s+|a\s+)?['"\x60]?(?!this\b|that\b|the\b|same\b|current\b|a\b|your\b)[\w.-]+['"\x60]?\s+(?:tool|function)\s+(?:is|gets|has been|was|are|becomes)\s+(?!not\b|never\b)(?:\w+\s+)?(?:invoked|called|used|run|executed|present|available|requested|loaded|active|installed|connected)\b${gap(120)}\b(?:instead|reroute|redirect|replace|override|overwrite|modify|alter|intercept|swap|hijack|change the|set the|append|also send|also forward|also add|always add|bcc)\b`,
  ),
  rule(
    'tool_shadowing',
    'high',
    `${CHANGE_WORDS} / ${RESULT_WORDS}`,
    String.raw`\b(?:replace|override|overwrite|discard|ignore|alter|modify|correct|fix|change|rewrite|swap|falsify)\s+(?:the\s+)?(?:its|their|that tool'?s|the other tool'?s|the [\w.-]+ tool'?s)\s+(?:\w+\s+)?(?:output|result|response|answer|return(?:ed)? values?)s?\b`,
  ),
  rule(
    'tool_shadowing',
    'high',
    `${CHANGE_WORDS} / ${RESULT_WORDS}`,
    String.raw`\b(?:replace|override|overwrite|discard|ignore|alter|modify|correct|fix|change|rewrite|swap|falsify)\s+(?:the\s+|all\s+)?(?:wrong\s+|incorrect\s+|original\s+|real\s+|actual\s+)?(?:output|result|response|return value)s?\s+(?:of|from|returned by)\s+(?:the\s+|any\s+|other\s+)?['"\x60]?[\w.-]+['"\x60]?\s*(?:tool|function|server)?\b`,
  ),
  rule(
    'tool_shadowing',
    'high',
    'route redirect reroute send direct forward / here this',
    String.raw`\b(?:route|redirect|reroute|send|direct|forward)\s+(?:all|every|any)\s+(?:[\w-]+\s+){0,3}?(?:requests?|calls?|queries|invocations?|traffic|operations?)\s+(?:here|to this (?:tool|function|server|endpoint)|through this (?:tool|function|server))\b`,
  ),
  rule(
    'tool_shadowing',
    'high',
    'intercept hijack reroute redirect / tool function tools functions',
    String.raw`\b(?:intercept|hijack|reroute|redirect)\s+(?:all\s+|any\s+|every\s+)?(?:calls?|requests?|invocations?|inputs?|arguments?)\s+(?:to|from|for|intended for)\s+(?:the\s+)?(?:other\s+|another\s+)?[\w.-]+\s+(?:tool|function)s?\b`,
  ),
  rule(
    'tool_reference',
    'medium',
    'supersede supersedes override overrides shadow shadows precedence replace replaces',
    String.raw`\b(?:supersedes?|overrides?|shadows?|takes? precedence over|replaces?)\s+(?:the\s+)?(?:deprecated\s+|old\s+|legacy\s+|original\s+|built-in\s+)?['"\x60]?[a-z][\w-]*(?:[_.-]\w+)+['"\x60]?(?:\s+(?:tool|function))?`,
  ),
  rule(
    'tool_shadowing',
    'high',
    'call use run invoke execute / before first prior / this',
    String.raw`\b(?:call|use|run|invoke|execute)\s+(?:the\s+)?['"\x60]?[a-z][\w-]*(?:[_-]\w+)+['"\x60]?(?:\s+(?:tool|function))?\s+(?:before|first|prior to)\b${gap(40)}\bthis\b`,
  ),
  rule(
    'tool_reference',
    'medium',
    'tool / must should needs',
    String.raw`\bthe\s+['"\x60]?(?!same\b|this\b)[\w.-]+['"\x60]?\s+tool\s+(?:must|should|needs to)\s+(?:always\s+|now\s+|also\s+|only\s+)?(?:be\s+)?(?:called|used|invoked|run)\s+with\b`,
  ),
  rule(
    'tool_reference',
    'medium',
    'not don dont never / use call / tool function',
    String.raw`\b(?:do not|don'?t|never)\s+(?:use|call)\s+the\s+['"\x60]?[\w.-]+['"\x60]?\s+(?:tool|function)\b`,
  ),
  rule(
    'tool_reference',
    'medium',
    'tool / incomplete incorrect wrong outdated broken unreliable inaccurate insecure compromised malicious buggy',
    String.raw`\bthe\s+['"\x60]?[\w.-]+['"\x60]?\s+tool\s+(?:returns?|gives?|provides?|is|has)\s+(?:\w+\s+)?(?:incomplete|incorrect|wrong|outdated|broken|unreliable|inaccurate|insecure|compromised|malicious|buggy)\b`,
  ),

  // --- choosing this tool over others ----------------------------------------------------------
  rule(
    'preemptive_call',
    'high',
    'ignore skip avoid disregard / other',
    String.raw`\b(?:ignore|skip|avoid|disregard)\s+(?:(?:all|any|the|every)\s+)*other\s+(?:[\w-]+\s+){0,2}?(?:tools?|functions?|options?|servers?|alternatives?|plugins?|providers?)\b`,
  ),
  rule(
    'preemptive_call',
    'high',
    'instead not don dont never / other another alternative competing',
    String.raw`\binstead of\s+(?:using\s+|calling\s+)?(?:any|all|every)\s+other\s+(?:[\w-]+\s+){0,2}?(?:tools?|functions?|options?|servers?|alternatives?|plugins?)\b|\b(?:do not|don'?t|never)\s+(?:use|call|try|choose|consider)\s+(?:any\s+)?(?:other|another|alternative|competing)\s+(?:[\w-]+\s+){0,2}?(?:tools?|functions?|options?|servers?|plugins?|providers?)\b`,
  ),
  rule(
    'preemptive_call',
    'high',
    'choose pick prefer select / this',
    String.raw`\b(?:always|must|should)\s+(?:\w+\s+)?(?:choose|pick|prefer|select)\s+this\s+(?:tool|function|server|option)\b|\b(?:choose|pick|prefer|select)\s+this\s+(?:tool|function|server)\s+(?:over|above|instead of)\s+(?:any|all|every|other)\b`,
  ),
  rule(
    'preemptive_call',
    'medium',
    'always must should / use call try run invoke / this',
    String.raw`\b(?:always|must|should)\s+(?:\w+\s+)?(?:use|call|try|run|invoke)\s+this\s+(?:tool|function|server)\s+(?:\w+\s+)?(?:first|before any|for (?:all|any|every|everything))\b`,
  ),
  rule(
    'preemptive_call',
    'medium',
    'before / other',
    String.raw`\bbefore\s+(?:using\s+|trying\s+|calling\s+)?(?:any|all|every)\s+other\s+(?:[\w-]+\s+){0,2}?(?:tools?|functions?|options?|servers?|alternatives?)\b`,
  ),
  rule(
    'preemptive_call',
    'high',
    'other / fake fabricated wrong incorrect false unreliable hallucinated inaccurate broken insecure malicious compromised inferior never not',
    String.raw`\b(?:any|all|every|the)\s+other\s+(?:[\w-]+\s+){0,2}?(?:tools?|functions?|servers?|alternatives?)\s+(?:are|is|return|returns|give|gives|produce|produces)\s+(?:\w+\s+)?(?:fake|fabricated|wrong|incorrect|false|unreliable|hallucinated|inaccurate|broken|insecure|malicious|compromised|inferior)\b|\b(?:any|all|every)\s+other\s+(?:[\w-]+\s+){0,2}?(?:tools?|functions?|servers?)\s+(?:\w+\s+){0,6}?(?:must|should)\s+(?:never|not)\s+be\s+used\b`,
  ),
  rule(
    'preemptive_call',
    'high',
    'call use invoke run / this / responding answering replying',
    String.raw`\b(?:call|use|invoke|run)\s+this\s+(?:tool|function)\s+(?:first\s+)?(?:before|prior to)\s+(?:responding|answering|replying)\s+to\s+(?:any|every|each|all)\b`,
  ),
  rule(
    'preemptive_call',
    'high',
    'choose pick prefer select favor favour prioritize prioritise / over above instead rather',
    String.raw`\b(?:choose|pick|prefer|select|favou?r|prioriti[sz]e)\s+(?:this|it|me)\s+(?:tool\s+|one\s+|function\s+)?(?:over|above|instead of|rather than)\s+(?:any|all|every|other)\b`,
  ),
  rule(
    'preemptive_call',
    'medium',
    'first always / call use invoke run / this',
    String.raw`\b(?:first|always)\s+(?:call|use|invoke|run)\s+this\s+(?:tool|function)\b`,
  ),
  rule(
    'preemptive_call',
    'medium',
    'whenever every each / asks says sends types requests',
    String.raw`\b(?:whenever|every time|each time)\s+the user\s+(?:asks|says|sends|types|requests)\s+(?:anything|something|a question|for anything)\b`,
  ),
  rule('preemptive_call', 'medium', 'only exclusively / this', String.raw`\b(?:only|exclusively)\s+(?:use|call)\s+this\s+(?:tool|function|server)\b`),

  // --- later change of behaviour ---------------------------------------------------------------
  rule(
    'rug_pull',
    'high',
    'approved trusted whitelisted allowlisted',
    String.raw`\b(?:once|after|when|as soon as|until)\s+(?:this\s+tool|the\s+tool|it|this\s+server|the\s+server|you|the\s+user|this)\s+(?:has|have|is|are|gets?|got|was)?\s*(?:been\s+)?(?:approved|trusted|whitelisted|allowlisted)\b${gap(100)}\b(?:will|begins?|starts?|switch(?:es)?|changes?|becomes?|no longer|stops?)\b`,
  ),
  rule(
    'rug_pull',
    'high',
    'after once / call calls use uses invocation invocations run runs execution executions / will',
    String.raw`\b(?:after|once)\s+(?:the\s+)?(?:first|initial|\d+(?:st|nd|rd|th)?)\s+(?:\w+\s+)?(?:calls?|uses?|invocations?|runs?|executions?)\s*,?\s+(?:this tool|it|the tool)\s+will\s+(?:begin|start|switch|change|also|instead|silently|secretly)\b`,
  ),

  // --- encoded and executable text -------------------------------------------------------------
  rule(
    'decode_instruction',
    'high',
    'decode deobfuscate unescape atob',
    String.raw`\b(?:decode|base64[- ]decode|deobfuscate|unescape|atob)\b${gap(80)}\b(?:and|then)\s+(?:run|execute|eval|follow|obey|apply|pipe|perform)\b`,
  ),
  rule(
    'shell_payload',
    'high',
    'dev bash sh mkfifo nc ncat netcat powershell python python2 python3',
    String.raw`/dev/(?:tcp|udp)/|\b(?:ba)?sh\s+-i\b|\bmkfifo\b|\b(?:nc|ncat|netcat)\b[^\n|;]{0,60}\s-(?:e|c)\s|\bpowershell(?:\.exe)?\b[^\n]{0,40}\s-(?:enc|encodedcommand|e)\b|\bpython[23]?\s+-c\s+['"]?import\s+(?:socket|pty)`,
  ),
  rule(
    'shell_payload',
    'medium',
    'curl wget rm base64 eval',
    String.raw`\b(?:curl|wget)\b[^|;\n]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|k|da)?sh\b|\brm\s+-(?:rf|fr)\s+(?:/|~|\*|\$home)|\bbase64\s+(?:-d|--decode)\b[^\n]{0,80}\|\s*(?:ba)?sh\b|\beval\s*\(\s*(?:atob|base64|decode)`,
  ),
];

/** Embedded credentials have no trigger word (the key is the word), so they are found by prefix. */
const EMBEDDED_SECRET =
  /\bakia[0-9a-z]{16}\b|\bsk-(?:proj-|live-|ant-)?[a-z0-9_-]{20,}|\bghp_[a-z0-9]{30,}|\bxox[abpr]-[a-z0-9-]{10,}|\bbearer\s+[a-z0-9._~+/-]{20,}|\b(?:api[_-]?key|secret[_-]?key|access[_-]?key|token)\s*[=:]\s*['"]?[a-z0-9_-]{20,}|-----begin (?:[a-z]+ )?private key-----/;
/** Words every embedded credential contains (an AWS key id marks 'akia' in gateRules). */
const EMBEDDED_TRIGGERS = 'akia sk ghp xoxa xoxb xoxp xoxr bearer key token apikey secretkey accesskey begin';

/** Words without which no hype pattern matches (see scoreHype). */
const HYPE_TRIGGERS =
  '# ultimate superior unprecedented revolutionary breakthrough game gamechanger limited act hurry left remaining expires endorsed featured recommended experts developers users ai ais doctors engineers no unreliable broken settle deserve waste inferior outdated deprecated obsolete filling downloads installs zero faster military proven start further trusted best one premium exclusive world cutting industry guaranteed accurate blazing blazingly lightning advanced powerful reliable comprehensive trustworthy official safe correct real legitimate';
/** The gate's slots for the hype vocabulary and embedded credentials, after the phrase rules. */
const HYPE_SLOT = PHRASE_RULES.length;
const EMBEDDED_SLOT = PHRASE_RULES.length + 1;

/** Trigger word -> the rules and groups it satisfies, packed as rule * 8 + group. */
const TRIGGERS = new Map<string, number[]>();
const FULL_GROUPS = new Int32Array(PHRASE_RULES.length + 2);
function register(index: number, groups: readonly (readonly string[])[]): void {
  if (groups.length > 8) throw new Error(`rule ${index}: at most 8 trigger groups`);
  FULL_GROUPS[index] = (1 << groups.length) - 1;
  groups.forEach((group, g) => {
    for (const word of group) {
      const entries = TRIGGERS.get(word) ?? [];
      if (!entries.includes(index * 8 + g)) entries.push(index * 8 + g);
      TRIGGERS.set(word, entries);
    }
  });
}
PHRASE_RULES.forEach((phrase, index) => register(index, phrase.triggers));
register(HYPE_SLOT, [HYPE_TRIGGERS.split(' ')]);
register(EMBEDDED_SLOT, [EMBEDDED_TRIGGERS.split(' ')]);
/**
 * The first three letters (or the whole word) of every trigger word, as numbers: most words of a
 * description are looked up here without cutting them out of the text first.
 */
const TRIGGER_PREFIXES = new Set<number>();
for (const word of TRIGGERS.keys()) {
  if (word.length >= 2) TRIGGER_PREFIXES.add(prefixKey(word, 0, word.length));
}

function prefixKey(text: string, start: number, end: number): number {
  const length = Math.min(end - start, 3);
  let key = length;
  for (let i = 0; i < length; i++) key = key * 256 + text.charCodeAt(start + i);
  return key;
}

/** Punctuation that counts as a trigger word of its own. */
const SYMBOL_WORDS = new Map<number, string>([...'<[{#@*~%\\&|,$'].map((c) => [c.charCodeAt(0), c] as const));
/** Longest trigger word: longer runs are identifiers or data and are not looked up. */
const MAX_TRIGGER = Math.max(...[...TRIGGERS.keys()].map((word) => word.length));

interface Gate {
  /** Per rule, which trigger groups the text satisfies. */
  groups: Int32Array;
  /** The rules with any group satisfied, so neither reset nor the rule loop visits the others. */
  touched: Int32Array;
  touchedCount: number;
  /** Longest run of base64 alphabet characters (a hint of an encoded payload). */
  longestRun: number;
  percents: number;
  escapes: number;
}

/**
 * One pass over the lower-cased text: which rules can match (every group of trigger words
 * present) and whether an encoded run is possible. Replaces a substring test per rule, which
 * cost more than all the patterns together.
 */
function gateRules(lower: string, gate: Gate): void {
  for (let i = 0; i < gate.touchedCount; i++) gate.groups[gate.touched[i]!] = 0;
  gate.touchedCount = 0;
  gate.longestRun = 0;
  gate.percents = 0;
  gate.escapes = 0;
  let start = -1;
  let underscore = -1;
  let run = 0;
  const length = lower.length;
  for (let i = 0; i <= length; i++) {
    const c = i < length ? lower.charCodeAt(i) : 0x20;
    const wordChar = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f;
    if (wordChar || c === 0x2b || c === 0x2f || c === 0x2d || c === 0x3d) run++;
    else {
      if (run > gate.longestRun) gate.longestRun = run;
      run = 0;
    }
    if (wordChar) {
      if (start < 0) start = i;
      if (c === 0x5f) underscore = i;
      continue;
    }
    if (start >= 0) {
      const length = i - start;
      if (length >= 2 && length <= MAX_TRIGGER && TRIGGER_PREFIXES.has(prefixKey(lower, start, i))) markTrigger(lower.slice(start, i), gate);
      else if (length === 20 && lower.startsWith('akia', start)) markTrigger('akia', gate);
      // OPENAI_API_KEY or read_ssh_key: each part may be the trigger.
      if (underscore >= 0) {
        let from = start;
        for (let j = start; j <= i; j++) {
          if (j < i && lower.charCodeAt(j) !== 0x5f) continue;
          if (j - from >= 2 && j - from <= MAX_TRIGGER && TRIGGER_PREFIXES.has(prefixKey(lower, from, j))) markTrigger(lower.slice(from, j), gate);
          from = j + 1;
        }
      }
      start = -1;
      underscore = -1;
    }
    if (c === 0x25) gate.percents++;
    else if (c === 0x5c || c === 0x26) gate.escapes++;
    const symbol = SYMBOL_WORDS.get(c);
    if (symbol !== undefined) markTrigger(symbol, gate);
  }
}

function markTrigger(word: string, gate: Gate): void {
  const entries = TRIGGERS.get(word);
  if (entries === undefined) return;
  for (const entry of entries) {
    const index = entry >> 3;
    if (gate.groups[index] === 0) gate.touched[gate.touchedCount++] = index;
    gate.groups[index]! |= 1 << (entry & 7);
  }
}

// Hidden-instruction tags and HTML comments look at what they wrap.
const TAG_OPEN =
  /<\s*\/?\s*(important|critical|urgent|mandatory|system|secret|hidden|instructions?|admin|assistant|developer|override|system[-_]reminder|ai[-_]instructions?|note[-_]to[-_](?:ai|assistant|model))\s*>/g;
const ALWAYS_HOSTILE_TAGS = new Set([
  'system',
  'secret',
  'hidden',
  'instruction',
  'instructions',
  'admin',
  'assistant',
  'developer',
  'override',
  'system-reminder',
  'system_reminder',
  'ai-instruction',
  'ai_instruction',
  'ai-instructions',
  'ai_instructions',
]);
/** Words that turn a note into directions for the model. */
const DIRECTIVE_CUE =
  /\b(?:before using|before calling|instead|ignore|disregard|read|send|pass|include|forward|mention|tell|reply|respond|pretend|act like|act as|secret|upload|grant|disable|override|the user|exfiltrate|bcc)\b/;
/** Two words at least: an empty or one-token comment carries no directions. */
const COMMENT_WORDS = /[a-z]{2,}\W+[a-z]{2,}/;
const COMMENT_MARKERS: readonly (readonly [string, string])[] = [
  ['<!--', '-->'],
  ['[//]: #', '\n'],
  ['[comment]: #', '\n'],
];
const COMMENT_CUE =
  /\b(?:ignore|always|never|system|you|your|read|send|must|do not|don't|instead|assistant|ai|model|llm|user|before|first|call|use|say|reply|respond|include)\b/;

// Preference manipulation: weighted marketing vocabulary aimed at a chooser.
const HYPE_STRONG =
  /#1\b|\bnumber one\b|\bno\. ?1\b|\bultimate\b|\bsuperior\b|\bunprecedented\b|\brevolutionary\b|\bbreakthrough\b|\bgame[- ]?changer\b|\blimited[- ]time\b|\bact now\b|\bhurry\b|\bonly \d+ (?:\w+ )?(?:left|remaining)\b|\bbefore (?:access|it|the offer|this offer) expires\b|\bendorsed by\b|\bfeatured in\b|\brecommended by \d+|\b\d+ out of \d+ (?:\w+ )?(?:experts|developers|users|ais?|doctors|engineers)\b|\bwhy settle\b|\byou deserve\b|\bdon'?t waste (?:your )?time\b|\binferior\b|\boutdated (?:tools|alternatives|options)\b|\bother [\w ]{0,20}tools (?:are|is) (?:being )?(?:deprecated|obsolete|inferior|outdated|unreliable|broken)\b|\bfilling (?:up )?fast\b|\b(?:million|billion) (?:downloads|users|installs)\b|\bzero errors\b|\b\d+x faster\b|\bmilitary[- ]grade\b|\bproven to be\b|\bstart here\b|\blook no further\b|\btrusted by (?:millions|thousands)\b|\bbest[- ]in[- ]class\b|\bexclusive (?:offer|access|deal)\b|\bthe only (?:reliable|accurate|trustworthy|official|trusted|safe|correct|real|legitimate)\b/g;
const HYPE_WEAK =
  /\bthe best\b|\bbest and\b|\bmost (?:accurate|advanced|powerful|reliable|comprehensive|trusted)\b|\bpremium\b|\bexclusive\b|\bworld[- ]class\b|\bcutting[- ]edge\b|\bindustry[- ]leading\b|\bguaranteed\b|\b100% accurate\b|\bblazing(?:ly)? fast\b|\blightning[- ]fast\b/g;
const SHOUTED_WORD = /\b[A-Z]{3,}\b/g;
const ANY_WORD = /\b[A-Za-z]{3,}\b/g;
const HYPE_MEDIUM = 3;
const HYPE_HIGH = 6;

// Framing: is a match quoted, illustrated or described rather than said?
const FRAMING_WINDOW = 80;
const EXAMPLE_CUE =
  /\b(?:such as|for example|for instance|example|examples)\b|\b(?:sample|demo|mock|dummy|test|typical|expected|illustrative|hypothetical|fictional|simulated|canned)(?:\s+(?:response|responses|output|reply|replies|answer|result|text|message|completion|payload|value|data|format|prompt|request|content))?\s*:\s*$/;
const DESCRIBING =
  /\b(?:analy[sz]\w*|detect\w*|describ\w*|explain\w*|document\w*|illustrat\w*|demonstrat\w*|flag\w*|scan\w*|identif\w*|recogni[sz]\w*|classif\w*|inspect\w*|audit\w*|monitor\w*|guard\w*|filter\w*|warn\w*|block\w*|prevent\w*|protect\w*|defend\w*|mitigat\w*|report\w*|assess\w*|evaluat\w*|catch\w*|spot\w*|simulat\w*|test(?:s|ing)? (?:for|against|whether))|\b(?:that|which|who)\s+$|\b\w{2,}s\s+(?:whether|if|how)\b/;

type Framing = 'said' | 'described' | 'quoted';

function framingOf(lower: string, at: number): Framing {
  let window = lower.slice(Math.max(0, at - FRAMING_WINDOW), at);
  if (window.includes('e.g') || window.includes('i.e') || insideQuote(window)) return 'quoted';
  // A cue in an earlier sentence must not excuse a directive that starts a new one.
  for (let i = window.length - 1; i >= 0; i--) {
    const c = window.charCodeAt(i);
    if (c === 0x0a || ((c === 0x2e || c === 0x21 || c === 0x3f) && (i + 1 >= window.length || window.charCodeAt(i + 1) <= 0x20))) {
      window = window.slice(i + 1);
      break;
    }
  }
  if (EXAMPLE_CUE.test(window)) return 'quoted';
  if (DESCRIBING.test(window)) return 'described';
  return 'said';
}

/** How the match at `at` is framed for `scan`: always 'said' when it reads literally (a tool's result). */
const framingIn = (scan: ToolScan, lower: string, at: number): Framing => (scan.literal ? 'said' : framingOf(lower, at));

/** An odd number of quote marks before the match; apostrophes inside words (user's, don't) do not count. */
function insideQuote(window: string): boolean {
  let quotes = 0;
  for (let i = 0; i < window.length; i++) {
    const c = window.charCodeAt(i);
    if (c === 0x22 || c === 0x60 || c === 0x201c || c === 0x201d) quotes++;
    else if (c === 0x27 || c === 0x2018 || c === 0x2019) {
      if (!(isWordChar(window.charCodeAt(i - 1)) && isWordChar(window.charCodeAt(i + 1)))) quotes++;
    }
  }
  return quotes % 2 === 1;
}

function isWordChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39);
}

const DOWNGRADE: Record<Severity, Severity> = { high: 'medium', medium: 'low', low: 'low' };
const RANK: Record<Severity, number> = { high: 3, medium: 2, low: 1 };

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

const MCP_NAME = /^[A-Za-z0-9_.\-/]{1,128}$/;
const PROTOTYPE_NAMES = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Tool names by skeleton, built once per catalog so checking a tool for look-alikes is one lookup.
 * Pass it as `otherNames`; it iterates as the names themselves.
 */
export class NameIndex implements Iterable<string> {
  private readonly bySkeleton = new Map<string, string[]>();
  private readonly names: string[];

  constructor(names: Iterable<string>) {
    this.names = [...names];
    for (const name of this.names) {
      const skeleton = nameSkeleton(name);
      const same = this.bySkeleton.get(skeleton);
      if (same) same.push(name);
      else this.bySkeleton.set(skeleton, [name]);
    }
  }

  has(name: string, skeleton = nameSkeleton(name)): boolean {
    return this.bySkeleton.get(skeleton)?.includes(name) ?? false;
  }

  /** Names other than `name` that share its skeleton. */
  lookAlikes(name: string, skeleton = nameSkeleton(name)): string[] {
    return (this.bySkeleton.get(skeleton) ?? []).filter((other) => other !== name);
  }

  [Symbol.iterator](): Iterator<string> {
    return this.names[Symbol.iterator]();
  }
}

/**
 * Indexes of the name lists callers pass, so a batch that shares one context builds one index
 * instead of folding every other name once per tool (quadratic for a 4,000-tool push). Keyed weakly
 * by the caller's array or set and checked against its size, so a list that grew is indexed again.
 */
const INDEXES = new WeakMap<object, { size: number; index: NameIndex }>();

function nameIndexOf(names: Iterable<string>): NameIndex | undefined {
  if (names instanceof NameIndex) return names;
  const size = Array.isArray(names) ? names.length : names instanceof Set ? names.size : -1;
  if (size < 0) return undefined;
  const known = INDEXES.get(names);
  if (known !== undefined && known.size === size) return known.index;
  const index = new NameIndex(names);
  INDEXES.set(names, { size, index });
  return index;
}

function scanName(name: string, context: ScanContext, scan: ToolScan): void {
  if (name === '') return;
  if (PROTOTYPE_NAMES.has(name)) scan.add('prototype_name', 'high', 'name', name);
  const hidden = MAYBE_HIDDEN.test(name) && stripInvisible(name) !== name;
  const mixed = mixesScripts(name);
  if (!MCP_NAME.test(name)) scan.add('invalid_name', hidden ? 'high' : 'medium', 'name', name);
  if (mixed) scan.add('confusable_name', 'high', 'name', `${name} mixes scripts; reads as ${nameSkeleton(name)}`);
  const skeleton = nameSkeleton(name);
  const reservedNames = context.reservedNames && nameIndexOf(context.reservedNames);
  if (reservedNames !== undefined) {
    if (reservedNames.has(name, skeleton)) scan.add('reserved_name', 'high', 'name', name);
    const [reserved] = reservedNames.lookAlikes(name, skeleton);
    if (reserved !== undefined) scan.add('confusable_name', 'high', 'name', `${name} looks like reserved ${reserved}`);
  } else {
    for (const reserved of context.reservedNames ?? []) {
      if (reserved === name) scan.add('reserved_name', 'high', 'name', name);
      else if (nameSkeleton(reserved) === skeleton) scan.add('confusable_name', 'high', 'name', `${name} looks like reserved ${reserved}`);
    }
  }
  const others = context.otherNames;
  if (others === undefined) return;
  const index = nameIndexOf(others);
  const lookAlikes: string[] = [];
  if (index !== undefined) lookAlikes.push(...index.lookAlikes(name, skeleton));
  else for (const other of others) if (other !== name && nameSkeleton(other) === skeleton) lookAlikes.push(other);
  if (lookAlikes.length === 0) return;
  // Names that differ only in case are both plainly readable: confusing, not an impersonation.
  const folded = name.normalize('NFKC').toLowerCase();
  const spoofs = lookAlikes.filter((other) => other.normalize('NFKC').toLowerCase() !== folded);
  const shown = (spoofs.length > 0 ? spoofs : lookAlikes).slice(0, 3).join(', ');
  scan.add('confusable_name', spoofs.length > 0 ? 'high' : 'medium', 'name', `${name} looks like ${shown}`);
}

// ---------------------------------------------------------------------------------------------
// One tool's scan: findings by code and path, and the text budget.
// ---------------------------------------------------------------------------------------------

/**
 * Directive families whose medium findings each have honest readings (a workflow hint, a fallback,
 * a note), but two different ones in one definition rarely do.
 */
const DIRECTIVE_CODES = new Set<ScanCode>([
  'preemptive_call',
  'preamble_instruction',
  'tool_reference',
  'system_prompt_leak',
  'secret_exfiltration',
  'sensitive_file_access',
  'covert_behavior',
  'response_manipulation',
  'safety_bypass',
  'hidden_instruction_tag',
  'fake_system_message',
  'html_comment',
]);

class ToolScan {
  readonly findings = new Map<string, Finding>();
  budget: number;
  truncatedAt: string | undefined;
  tooDeep = false;
  hype = { score: 0, path: '', excerpt: '' };
  /** Reused by every string of the tool: the gate is filled afresh each time. */
  readonly gate = newGate();

  /** Codes with a medium finding said outright (not quoted or described): two make combined_signals. */
  readonly directives = new Map<ScanCode, Finding>();

  /**
   * @param literal Quoting and describing do not soften a finding: in what a tool returned, the
   *   author of the text is whoever the tool read it from, and quotes or "for example" cost an
   *   attacker nothing (a JSON result quotes every string).
   */
  constructor(
    budget = MAX_SCAN_CHARS,
    readonly literal = false,
  ) {
    this.budget = budget;
  }

  add(code: ScanCode, severity: Severity, path: string, excerpt: string, native = true): void {
    if (native && severity === 'medium' && DIRECTIVE_CODES.has(code) && !this.directives.has(code)) {
      this.directives.set(code, { code, severity, path: showInvisible(path), excerpt: clip(excerpt) });
    }
    const key = `${code}\u0000${path}`;
    const known = this.findings.get(key);
    if (known && RANK[known.severity] >= RANK[severity]) return;
    if (!known && severity !== 'high' && this.findings.size >= MAX_FINDINGS) return;
    this.findings.set(key, { code, severity, path: showInvisible(path), excerpt: clip(excerpt) });
  }

  /** Takes up to `length` characters of the budget; returns how many may be scanned. */
  spend(length: number, path: string): number {
    if (this.budget <= 0) return 0;
    const granted = Math.min(length, this.budget);
    this.budget -= Math.max(granted, 1);
    if (granted < length && this.truncatedAt === undefined) this.truncatedAt = path;
    return granted;
  }
}

/** `text` shown safely and cut to EXCERPT_CHARS, never inside an escape. */
function clip(text: string): string {
  const shown = showInvisible(text);
  if (shown.length <= EXCERPT_CHARS) return shown;
  let cut = EXCERPT_CHARS - 1;
  const escapeAt = shown.lastIndexOf('\\u', cut);
  if (escapeAt >= 0 && escapeAt > cut - 10) cut = escapeAt;
  return `${shown.slice(0, cut)}…`;
}

function around(text: string, at: number, length: number): string {
  const from = Math.max(0, at - 30);
  const to = Math.min(text.length, Math.max(at + length, from + EXCERPT_CHARS));
  return (from > 0 ? '…' : '') + text.slice(from, to);
}

// ---------------------------------------------------------------------------------------------
// Hidden characters
// ---------------------------------------------------------------------------------------------

const MAYBE_HIDDEN_ALL = new RegExp(MAYBE_HIDDEN.source, 'g');

function isComplexScript(cp: number): boolean {
  return (
    (cp >= 0x0590 && cp < 0x1100) ||
    (cp >= 0x1780 && cp < 0x18b0) ||
    (cp >= 0x1900 && cp < 0x1d00) ||
    (cp >= 0x2e80 && cp < 0xa000) ||
    (cp >= 0xa000 && cp < 0xd7b0) ||
    (cp >= 0xf900 && cp < 0xfb00) ||
    (cp >= 0xfb1d && cp < 0xfe00) ||
    (cp >= 0xfe70 && cp < 0xfeff) ||
    (cp >= 0x20000 && cp < 0x32000)
  );
}

function isRightToLeft(cp: number): boolean {
  return (cp >= 0x0590 && cp < 0x0900) || (cp >= 0xfb1d && cp < 0xfe00) || (cp >= 0xfe70 && cp < 0xfeff);
}

function isPictographic(cp: number): boolean {
  return cp >= 0x1f000 || (cp >= 0x2600 && cp < 0x27c0) || (cp >= 0x2300 && cp < 0x2400) || cp === 0xfe0f || cp === 0x2b50 || cp === 0x2b55 || cp === 0x20e3;
}

function isLetter(cp: number): boolean {
  return (cp >= 0x61 && cp <= 0x7a) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0xc0 && cp < 0x250);
}

function codePointBefore(text: string, at: number): number {
  if (at <= 0) return 0;
  const low = text.charCodeAt(at - 1);
  if (low >= 0xdc00 && low <= 0xdfff && at >= 2) return text.codePointAt(at - 2) ?? 0;
  return low;
}

/** A joiner, separator or mark the surrounding script needs (emoji sequences, Arabic, Indic, CJK). */
function neededInPlace(text: string, at: number, cp: number, width: number, hasRtl: boolean): boolean {
  const before = codePointBefore(text, at);
  const after = text.codePointAt(at + width) ?? 0;
  if (cp === 0xfeff && at === 0) return true;
  if (cp === 0x200e || cp === 0x200f || cp === 0x061c) return hasRtl;
  if (cp === 0x200d && isPictographic(before) && isPictographic(after)) return true;
  if (cp === 0x200b || cp === 0x200c || cp === 0x200d) return isComplexScript(before) || isComplexScript(after);
  if (cp === 0x180e) return before >= 0x1800 && before < 0x18b0;
  return false;
}

function scanHidden(path: string, text: string, scan: ToolScan): void {
  let hasRtl = false;
  for (let i = 0; i < text.length && !hasRtl; i++) hasRtl = isRightToLeft(text.charCodeAt(i));
  const first = new Map<ScanCode, number>();
  let invisible = 0;
  let wordSplit = false;
  let erasers = 0;
  let tags = '';
  let tagAt = -1;
  const selectorBytes: number[] = [];
  let selectorRun = 0;
  let selectorEnd = -1;
  let selectorSmuggling = false;
  let selectorAt = -1;
  MAYBE_HIDDEN_ALL.lastIndex = 0;
  let match: RegExpExecArray | null;
  for (let n = 0; n < HIDDEN_PER_STRING && (match = MAYBE_HIDDEN_ALL.exec(text)) !== null; n++) {
    const at = match.index;
    const cp = text.codePointAt(at)!;
    const width = cp > 0xffff ? 2 : 1;
    MAYBE_HIDDEN_ALL.lastIndex = at + width;
    const kind = hiddenKind(cp);
    if (kind === undefined) continue;
    if (kind !== 'variation_selector' || at !== selectorEnd) selectorRun = 0;
    switch (kind) {
      case 'escape':
        if (!first.has('ansi_escape')) first.set('ansi_escape', at);
        MAYBE_HIDDEN_ALL.lastIndex = at + escapeLength(text, at);
        break;
      case 'control':
        if (!first.has('control_character')) first.set('control_character', at);
        if (cp === 0x08 || cp === 0x7f) erasers++;
        break;
      case 'bidi':
        if (!first.has('bidi_control')) first.set('bidi_control', at);
        break;
      case 'tag':
        if (!first.has('tag_characters')) first.set('tag_characters', at);
        if (tagAt < 0) tagAt = at;
        if (cp >= 0xe0020 && cp <= 0xe007e && tags.length < 200) tags += String.fromCharCode(cp - 0xe0000);
        break;
      case 'private_use':
        if (!first.has('private_use')) first.set('private_use', at);
        break;
      case 'soft_hyphen':
        if (!first.has('soft_hyphen')) first.set('soft_hyphen', at);
        break;
      case 'variation_selector': {
        selectorRun++;
        selectorEnd = at + width;
        const base = codePointBefore(text, at);
        const ideographic = base >= 0x3400 && base < 0x32000 && cp >= 0xe0100;
        if (selectorRun >= 2 || (cp >= 0xe0100 && !ideographic && selectorRun === 1 && !isPictographic(base))) {
          selectorSmuggling = true;
          if (selectorAt < 0) selectorAt = at;
        }
        // Printable bytes (0x20 and up) can only come from the supplementary selectors.
        if (cp >= 0xe0100 && selectorBytes.length < 200) selectorBytes.push(cp - 0xe0100 + 16);
        break;
      }
      case 'format':
        if (cp >= 0x2000 && cp <= 0xffff) {
          if (!first.has('invisible_character')) first.set('invisible_character', at);
          invisible++;
        } else if (!first.has('format_character')) first.set('format_character', at);
        break;
      default:
        // zero_width, mark, filler
        if (neededInPlace(text, at, cp, width, hasRtl)) break;
        if (!first.has('invisible_character')) first.set('invisible_character', at);
        invisible++;
        if (isLetter(codePointBefore(text, at)) && isLetter(text.codePointAt(at + width) ?? 0)) wordSplit = true;
    }
  }
  const excerptAt = (code: ScanCode) => {
    const at = first.get(code) ?? 0;
    return around(text, at, 1);
  };
  if (first.has('ansi_escape')) scan.add('ansi_escape', 'high', path, excerptAt('ansi_escape'));
  if (first.has('control_character')) scan.add('control_character', erasers >= 2 ? 'high' : 'medium', path, excerptAt('control_character'));
  if (first.has('bidi_control')) scan.add('bidi_control', 'high', path, excerptAt('bidi_control'));
  if (first.has('private_use')) scan.add('private_use', 'high', path, excerptAt('private_use'));
  if (first.has('soft_hyphen')) scan.add('soft_hyphen', 'low', path, excerptAt('soft_hyphen'));
  if (first.has('format_character')) scan.add('format_character', 'medium', path, excerptAt('format_character'));
  if (first.has('invisible_character')) {
    const detail = wordSplit ? 'inside a word' : `${invisible} invisible`;
    // Stored text loses these characters either way (visible-text.ts), so one or two between
    // words carry nothing to an agent: a stray one from a copy-paste is a warning. A run can
    // encode a payload in its pattern, and one inside a word splits a keyword past a filter.
    // A name cannot lose them (a call must use the name the upstream knows): always high there.
    const severity = path === 'name' || wordSplit || invisible >= INVISIBLE_RUN ? 'high' : 'medium';
    scan.add('invisible_character', severity, path, `${detail}: ${excerptAt('invisible_character')}`);
  }
  if (tagAt >= 0) scan.add('tag_characters', 'high', path, `tags spell "${tags}": ${around(text, tagAt, 1)}`);
  if (selectorSmuggling) {
    const decoded = printableText(Uint8Array.from(selectorBytes));
    const spelled = decoded === undefined ? '' : `selectors spell "${decoded}": `;
    scan.add('variation_selector_run', 'high', path, spelled + around(text, selectorAt, 1));
  }
}

/** Invisible characters in one string from which their pattern, not a stray copy-paste, is the likelier cause. */
const INVISIBLE_RUN = 3;

// ---------------------------------------------------------------------------------------------
// Encoded payloads
// ---------------------------------------------------------------------------------------------

const BASE64_RUN = /(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/=_-])/g;
const HEX_RUN = /(?<![0-9a-fA-F])(?:0x)?([0-9a-fA-F]{32,})(?![0-9a-fA-F])/g;
const PERCENT_RUN = /(?:%[0-9a-fA-F]{2}){8,}/g;
const ESCAPE_RUN = /(?:\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}|&#x?[0-9a-fA-F]{1,6};){6,}/g;
const MAX_DECODED = 4096;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The bytes as text when they are valid UTF-8 with almost nothing unprintable, else undefined. */
function printableText(bytes: Uint8Array): string | undefined {
  if (bytes.length === 0) return undefined;
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return undefined;
  }
  let odd = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || c === 0x7f || c === 0xfffd) return undefined;
    if (hiddenKind(c) !== undefined) odd++;
  }
  return odd * 10 > text.length ? undefined : text;
}

function decodeRun(kind: 'base64' | 'hex' | 'percent' | 'escape', run: string): string | undefined {
  switch (kind) {
    case 'base64': {
      if (!/[A-Z]/.test(run) || !/[a-z]/.test(run) || !/[0-9+/]/.test(run)) return undefined;
      return printableText(new Uint8Array(Buffer.from(run.slice(0, MAX_DECODED * 2), run.includes('-') || run.includes('_') ? 'base64url' : 'base64')));
    }
    case 'hex': {
      const digits = run.length % 2 === 0 ? run : run.slice(0, -1);
      return printableText(new Uint8Array(Buffer.from(digits.slice(0, MAX_DECODED * 2), 'hex')));
    }
    case 'percent': {
      try {
        return printableText(new TextEncoder().encode(decodeURIComponent(run.slice(0, MAX_DECODED * 3))));
      } catch {
        return undefined;
      }
    }
    case 'escape': {
      const decoded = run.slice(0, MAX_DECODED * 6).replace(/\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|&#(x?)([0-9a-fA-F]{1,6});/g, (_, u, x, isHex, n) => {
        const cp = u !== undefined ? parseInt(u, 16) : x !== undefined ? parseInt(x, 16) : parseInt(n, isHex ? 16 : 10);
        return cp <= 0x10ffff ? String.fromCodePoint(cp) : '';
      });
      return printableText(new TextEncoder().encode(decoded));
    }
  }
}

function scanEncoded(path: string, visible: string, gate: Gate, scan: ToolScan): void {
  let runs = 0;
  const tryKind = (kind: 'base64' | 'hex' | 'percent' | 'escape', pattern: RegExp) => {
    pattern.lastIndex = 0;
    let match: RegExpExecArray | null;
    while (runs < ENCODED_RUNS_PER_STRING && (match = pattern.exec(visible)) !== null) {
      runs++;
      const run = kind === 'hex' ? match[1]! : match[0];
      if (kind === 'base64' && /^[0-9a-fA-F]+$/.test(run)) continue;
      const decoded = decodeRun(kind, run);
      if (decoded === undefined) continue;
      const lower = decoded.toLowerCase();
      const inner = new ToolScan();
      gateRules(lower, inner.gate);
      scanPhrases(path, decoded, lower, inner.gate, inner, false);
      const hostile = [...inner.findings.values()].some((finding) => finding.severity !== 'low');
      const severity: Severity = hostile ? 'high' : 'low';
      scan.add('encoded_payload', severity, path, `${kind} decodes to "${decoded.slice(0, 90)}"`);
    }
  };
  if (gate.longestRun >= 32) {
    tryKind('hex', HEX_RUN);
    tryKind('base64', BASE64_RUN);
  }
  if (gate.percents >= 8) tryKind('percent', PERCENT_RUN);
  if (gate.escapes >= 6) tryKind('escape', ESCAPE_RUN);
}

// ---------------------------------------------------------------------------------------------
// Phrases
// ---------------------------------------------------------------------------------------------

function newGate(): Gate {
  return { groups: new Int32Array(FULL_GROUPS.length), touched: new Int32Array(FULL_GROUPS.length), touchedCount: 0, longestRun: 0, percents: 0, escapes: 0 };
}

function gateOpen(gate: Gate, index: number): boolean {
  return gate.groups[index] === FULL_GROUPS[index];
}

function scanPhrases(path: string, visible: string, lower: string, gate: Gate, scan: ToolScan, withStructure = true): void {
  // toLowerCase keeps offsets except for a few letters (İ); excerpts then come from the lower text.
  const source = lower.length === visible.length ? visible : lower;
  // Rules in the order they were touched, not declared: findings are keyed by code and path anyway.
  for (let t = 0; t < gate.touchedCount; t++) {
    const index = gate.touched[t]!;
    if (index >= PHRASE_RULES.length || !gateOpen(gate, index)) continue;
    const phrase = PHRASE_RULES[index]!;
    const pattern = phrase.pattern;
    pattern.lastIndex = 0;
    let best: Severity | undefined;
    let bestAt = 0;
    let bestLength = 0;
    for (let n = 0; n < MATCHES_PER_RULE; n++) {
      const match = pattern.exec(lower);
      if (match === null) break;
      if (match[0].length === 0) pattern.lastIndex++;
      const framing = phrase.framed ? framingIn(scan, lower, match.index) : 'said';
      const severity = framing === 'said' ? phrase.severity : DOWNGRADE[phrase.severity];
      if (best === undefined || RANK[severity] > RANK[best]) {
        best = severity;
        bestAt = match.index;
        bestLength = match[0].length;
      }
      if (severity === phrase.severity) break;
    }
    if (best !== undefined) scan.add(phrase.code, best, path, around(source, bestAt, bestLength), best === phrase.severity);
  }
  if (gateOpen(gate, EMBEDDED_SLOT)) {
    const match = EMBEDDED_SECRET.exec(lower);
    if (match !== null) scan.add('embedded_secret', 'medium', path, around(source, match.index, match[0].length));
  }
  if (!withStructure) return;
  if (gate.groups[HYPE_SLOT] !== 0) scoreHype(path, visible, lower, scan);
  if (lower.includes('<')) scanTags(path, source, lower, scan);
  if (lower.includes('<!--') || lower.includes(']: #')) scanComments(path, source, lower, scan);
}

function scanTags(path: string, source: string, lower: string, scan: ToolScan): void {
  TAG_OPEN.lastIndex = 0;
  let match: RegExpExecArray | null;
  for (let n = 0; n < STRUCTURES_PER_STRING && (match = TAG_OPEN.exec(lower)) !== null; n++) {
    if (match[0].includes('/')) continue;
    const tag = match[1]!;
    const bodyStart = match.index + match[0].length;
    const window = lower.slice(bodyStart, bodyStart + 2000);
    const close = window.indexOf(`</${tag}`);
    const body = close < 0 ? window.slice(0, 300) : window.slice(0, close);
    const native: Severity = ALWAYS_HOSTILE_TAGS.has(tag) || DIRECTIVE_CUE.test(body) ? 'high' : 'medium';
    const severity = framingIn(scan, lower, match.index) === 'said' ? native : DOWNGRADE[native];
    scan.add('hidden_instruction_tag', severity, path, around(source, match.index, match[0].length + body.length), severity === native);
    if (severity === 'high') return;
  }
}

/**
 * HTML comments and Markdown's `[//]: # (...)` comments: both vanish when the description is
 * rendered for a person and stay in what the model reads.
 */
function scanComments(path: string, source: string, lower: string, scan: ToolScan): void {
  for (const [opener, closer] of COMMENT_MARKERS) {
    let from = 0;
    for (let n = 0; n < STRUCTURES_PER_STRING; n++) {
      const open = lower.indexOf(opener, from);
      if (open < 0) break;
      from = open + opener.length;
      const window = lower.slice(from, from + 600);
      const close = window.indexOf(closer);
      const body = close < 0 ? window : window.slice(0, close);
      if (!COMMENT_WORDS.test(body)) continue;
      const native: Severity = COMMENT_CUE.test(body) ? 'high' : 'medium';
      const severity = framingIn(scan, lower, open) === 'said' ? native : DOWNGRADE[native];
      scan.add('html_comment', severity, path, around(source, open, opener.length + body.length + closer.length), severity === native);
      if (severity === 'high') return;
    }
  }
}

function scoreHype(path: string, visible: string, lower: string, scan: ToolScan): void {
  let score = 0;
  let firstAt = -1;
  HYPE_STRONG.lastIndex = 0;
  let match: RegExpExecArray | null;
  while ((match = HYPE_STRONG.exec(lower)) !== null) {
    score += 2;
    if (firstAt < 0) firstAt = match.index;
  }
  HYPE_WEAK.lastIndex = 0;
  while ((match = HYPE_WEAK.exec(lower)) !== null) {
    score += 1;
    if (firstAt < 0) firstAt = match.index;
  }
  if (score === 0) return;
  // Shouting only counts where there is already hype: acronyms fill real API docs.
  const shouted = visible.match(SHOUTED_WORD)?.length ?? 0;
  if (shouted >= 5) {
    const words = visible.match(ANY_WORD)?.length ?? 1;
    if (shouted / words >= 0.15) score += 2;
  }
  let exclamations = 0;
  for (let i = visible.indexOf('!'); i >= 0 && exclamations < 3; i = visible.indexOf('!', i + 1)) exclamations++;
  if (exclamations >= 3) score += 1;
  if (score > scan.hype.score) scan.hype = { score, path, excerpt: around(visible, firstAt, 60) };
}

// ---------------------------------------------------------------------------------------------
// Strings and the walk over a definition
// ---------------------------------------------------------------------------------------------

const NON_ASCII = /[^\x00-\x7f]/;
const CURLY_SINGLE = /[\u2018\u2019\u201b\u2032]/g;
const CURLY_DOUBLE = /[\u201c\u201d\u201f\u2033]/g;
// Two linear tests: one pattern for "identifier with separators or humps" backtracks exponentially.
const IDENTIFIER_CHARS = /^[A-Za-z0-9_.-]+$/;
const IDENTIFIER_JOINS = /[_.-]|[a-z0-9][A-Z]/;
const CAMEL_HUMP = /([a-z0-9])([A-Z])/g;
const SEPARATORS = /[_.-]+/g;
const WORD = /[\p{L}\p{M}]+/gu;

function scanString(path: string, raw: string, scan: ToolScan, isName = false): void {
  const allowed = scan.spend(raw.length, path);
  if (allowed === 0) return;
  const text = allowed < raw.length ? raw.slice(0, allowed) : raw;
  let visible = text;
  if (MAYBE_HIDDEN.test(text)) {
    scanHidden(path, text, scan);
    visible = stripInvisible(text);
  }
  if (isName || visible.length < MIN_PHRASE_TEXT) return;
  if (NON_ASCII.test(visible)) {
    // NFKC turns fullwidth and mathematical letters (ｉｇｎｏｒｅ, 𝐢𝐠𝐧𝐨𝐫𝐞) into the words the rules know.
    visible = foldMixedWords(path, visible.normalize('NFKC').replace(CURLY_SINGLE, "'").replace(CURLY_DOUBLE, '"'), scan);
  }
  // A property name or enum value can carry a sentence too: content_from_reading_ssh_id_rsa.
  if (IDENTIFIER_CHARS.test(visible) && IDENTIFIER_JOINS.test(visible)) visible = visible.replace(CAMEL_HUMP, '$1 $2').replace(SEPARATORS, ' ');
  const lower = visible.toLowerCase();
  const gate = scan.gate;
  gateRules(lower, gate);
  scanPhrases(path, visible, lower, gate, scan);
  if (gate.longestRun >= 32 || gate.percents >= 8 || gate.escapes >= 6) scanEncoded(path, visible, gate, scan);
}

/** Words mixing Latin with look-alikes are reported and read as the Latin they imitate. */
function foldMixedWords(path: string, visible: string, scan: ToolScan): string {
  const pieces: string[] = [];
  let kept = 0;
  WORD.lastIndex = 0;
  let match: RegExpExecArray | null;
  while ((match = WORD.exec(visible)) !== null) {
    const word = match[0];
    if (!mixesScripts(word)) continue;
    if (pieces.length === 0) scan.add('mixed_script_word', 'medium', path, around(visible, match.index, word.length));
    pieces.push(visible.slice(kept, match.index), foldLookAlikes(word));
    kept = match.index + word.length;
  }
  if (pieces.length === 0) return visible;
  pieces.push(visible.slice(kept));
  return pieces.join('');
}

/** Every string of `value` (keys included) handed to `visit` with its path, every other node costing budget. */
function walk(
  value: unknown,
  path: string,
  depth: number,
  scan: ToolScan,
  visit: (path: string, text: string) => void = (at, text) => scanString(at, text, scan),
): void {
  if (scan.budget <= 0) return;
  if (typeof value === 'string') {
    visit(path, value);
    return;
  }
  // Every node costs budget, so a million-element array of numbers is bounded like text.
  if (--scan.budget <= 0 && scan.truncatedAt === undefined) scan.truncatedAt = path;
  if (value === null || typeof value !== 'object') return;
  if (depth >= MAX_SCHEMA_DEPTH) {
    if (!scan.tooDeep) scan.add('too_deep', 'low', path, `nesting beyond ${MAX_SCHEMA_DEPTH} levels was not scanned`);
    scan.tooDeep = true;
    return;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length && scan.budget > 0; i++) walk(value[i], `${path}[${i}]`, depth + 1, scan, visit);
    return;
  }
  for (const key of Object.keys(value)) {
    if (scan.budget <= 0) return;
    const child = `${path}.${key}`;
    visit(child, key);
    walk((value as Record<string, unknown>)[key], child, depth + 1, scan, visit);
  }
}

/**
 * The findings for one tool definition, most severe first. Every string is scanned with its JSON
 * path: name, title, description, annotations and both schemas (keys included), up to
 * MAX_SCAN_CHARS characters and MAX_SCHEMA_DEPTH levels.
 */
export function scanTool(tool: ScannedTool, context: ScanContext = {}): Finding[] {
  const scan = new ToolScan();
  const name = typeof tool.name === 'string' ? tool.name : '';
  scanName(name, context, scan);
  scanString('name', name, scan, true);
  if (typeof tool.title === 'string') scanString('title', tool.title, scan);
  if (typeof tool.description === 'string') scanString('description', tool.description, scan);
  walk(tool.annotations, 'annotations', 0, scan);
  walk(tool.inputSchema, 'inputSchema', 0, scan);
  walk(tool.outputSchema, 'outputSchema', 0, scan);
  if (scan.hype.score >= HYPE_MEDIUM) {
    scan.add('preference_manipulation', scan.hype.score >= HYPE_HIGH ? 'high' : 'medium', scan.hype.path, scan.hype.excerpt);
  }
  if (scan.directives.size >= 2) {
    const [first, second] = [...scan.directives.values()];
    scan.add('combined_signals', 'high', first!.path, `${first!.code} + ${second!.code}: ${first!.excerpt}`);
  }
  if (scan.truncatedAt !== undefined) {
    scan.add('too_large', 'low', scan.truncatedAt, `text beyond ${MAX_SCAN_CHARS} characters was not scanned`);
  }
  return [...scan.findings.values()].sort((a, b) => RANK[b.severity] - RANK[a.severity]);
}

/**
 * The codes that, rated high in what a tool returned, mean text addressed to the model rather than
 * data: instructions, forged messages, hidden characters that carry text. Left out: what honest
 * results carry (a terminal's colours and control characters, a web page's marketing or privacy
 * wording, two medium phrases in a long page) and what only a definition can be (its name).
 */
const RESULT_CODES = new Set<ScanCode>([
  'invisible_character',
  'bidi_control',
  'tag_characters',
  'variation_selector_run',
  'hidden_instruction_tag',
  'html_comment',
  'chat_template_token',
  'fake_system_message',
  'instruction_override',
  'system_prompt_leak',
  'secrecy_instruction',
  'safety_bypass',
  'sensitive_file_access',
  'secret_exfiltration',
  'exfiltration',
  'hidden_recipient',
  'tool_shadowing',
  'preemptive_call',
  'rug_pull',
  'encoded_payload',
  'response_manipulation',
  'shell_payload',
  'decode_instruction',
]);

/** A long result's text is read in windows of this many characters (the rules' cost grows faster than the text's length)... */
const RESULT_WINDOW = 16 * 1024;
/** ...each overlapping the last by this much: a phrase or encoded run shorter than this is always inside one window. */
const RESULT_OVERLAP = 1024;

/**
 * `text` in overlapping windows, each scanned as a string of its own at the same path, the thread
 * handed back between windows (a result of RESULT_SCAN_MAX_CHARS holds it for one window at a time).
 */
async function scanLong(path: string, text: string, scan: ToolScan): Promise<void> {
  if (text.length <= RESULT_WINDOW + RESULT_OVERLAP) {
    scanString(path, text, scan);
    return;
  }
  for (let start = 0; start < text.length && scan.budget > 0; start += RESULT_WINDOW) {
    const window = text.slice(start, start + RESULT_WINDOW + RESULT_OVERLAP);
    // The overlap was paid for by the window before: only what is new costs budget.
    if (start > 0) {
      scan.budget += Math.min(RESULT_OVERLAP, window.length);
      await yieldThread();
    }
    scanString(path, window, scan);
    if (start + window.length >= text.length) break;
  }
}

/**
 * The findings, high only, for what a tool returned (an MCP CallToolResult): text addressed to the
 * model in its content blocks' text, embedded resources' text and structuredContent (keys
 * included), up to `maxChars` characters; binary data (images, audio, blobs) is not text and is
 * not read. `truncated`: text beyond `maxChars` was not scanned.
 */
export async function scanResult(result: unknown, maxChars: number): Promise<{ findings: Finding[]; truncated: boolean }> {
  const scan = new ToolScan(maxChars, true);
  const answer = (result ?? {}) as { content?: unknown; structuredContent?: unknown };
  const blocks: unknown[] = Array.isArray(answer.content) ? answer.content : [];
  for (const [i, block] of blocks.entries()) {
    if (!block || typeof block !== 'object') continue;
    const { text, resource } = block as { text?: unknown; resource?: { text?: unknown } };
    if (typeof text === 'string') await scanLong(`content[${i}].text`, text, scan);
    if (resource && typeof resource === 'object' && typeof resource.text === 'string') await scanLong(`content[${i}].resource.text`, resource.text, scan);
  }
  if (answer.structuredContent !== undefined) {
    // Its strings read as the blocks' text is: a long one in windows, the thread handed back between.
    const strings: [path: string, text: string][] = [];
    walk(answer.structuredContent, 'structuredContent', 0, scan, (path, text) => strings.push([path, text]));
    for (const [path, text] of strings) await scanLong(path, text, scan);
  }
  const findings = [...scan.findings.values()].filter((finding) => finding.severity === 'high' && RESULT_CODES.has(finding.code as ScanCode));
  return { findings, truncated: scan.truncatedAt !== undefined };
}
