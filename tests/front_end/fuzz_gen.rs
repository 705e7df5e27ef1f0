//! Input generators for the composer fuzz targets (tests/fuzz_*.rs): random text biased to the
//! grammars' special characters, and grammar-shaped inputs: overrides (`a.b=[1,{x:${y}}]`,
//! `+k@pkg=v`, sweeps, function calls), YAML documents (anchors, aliases, merge keys, deep
//! nesting, odd scalars) and interpolations (nesting, escapes, resolvers), plus the deep and
//! explosive shapes that probe the composer's bounds.
use proptest::prelude::*;
use proptest::sample::select;

/// Characters the override, YAML and interpolation grammars treat specially (and a few others).
const SPECIAL: &[char] = &[
    '$', '{', '}', '[', ']', '(', ')', ':', '=', ',', '.', '\\', '\'', '"', ' ', '\t', '@', '/',
    '+', '~', '-', '?', '#', '&', '*', '!', '|', '>', '%', '\n', '_', '0', '1', 'a', 'x', '<', 'e',
    'é', '\u{0}',
];

/// Random text, mostly grammar characters.
pub fn noisy(max: usize) -> impl Strategy<Value = String> + Clone {
    prop::collection::vec(
        prop_oneof![6 => select(SPECIAL), 1 => any::<char>()],
        0..max,
    )
    .prop_map(String::from_iter)
}

fn words(w: &[&'static str]) -> impl Strategy<Value = String> + Clone {
    select(w.to_vec()).prop_map(str::to_string)
}

pub fn ident() -> impl Strategy<Value = String> + Clone {
    words(&[
        "a", "b", "c", "x", "model", "db", "m", "opts", "layers", "name", "hydra", "job", "k-1",
        "_y", "$v", "0", "12", "defaults", "_self_", "run", "dir",
    ])
}

/// A dotted key of existing-looking names.
pub fn dotted() -> impl Strategy<Value = String> + Clone {
    prop::collection::vec(ident(), 1..4).prop_map(|v| v.join("."))
}

fn number() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>().prop_map(|f| format!("{f:?}")),
        words(&[
            "1e3",
            "-.5",
            "1_000",
            "0x1f",
            "0o17",
            "0b101",
            "inf",
            "-inf",
            "nan",
            "+3",
            "1.",
            ".5e+3",
            "1__2",
            "00",
            "9223372036854775808",
            "1:30",
            "1e400",
        ]),
    ]
}

/// An interpolation as it may appear in a value (recursive: nested `${...}` and arguments).
pub fn interpolation() -> impl Strategy<Value = String> + Clone {
    let leaf = prop_oneof![
        dotted().prop_map(|k| format!("${{{k}}}")),
        ident().prop_map(|k| format!("${{.{k}}}")),
        ident().prop_map(|k| format!("${{..{k}}}")),
        ident().prop_map(|k| format!("${{{k}[0]}}")),
        ident().prop_map(|k| format!("\\${{{k}}}")),
        words(&[
            "${now:%Y-%m-%d}",
            "${now:%Q%}",
            "${hydra:job.name}",
            "${hydra:nope}"
        ]),
        words(&[
            "${oc.env:LLMPROF_FUZZ_SET}",
            "${oc.env:UNSET_X,d}",
            "${oc.env:UNSET_X}"
        ]),
        words(&[
            "${}",
            "${",
            "${a",
            "}",
            "${a:}",
            "${:x}",
            "${a.}",
            "${..}",
            "${oc.decode:}"
        ]),
        number(),
        ident(),
    ];
    leaf.prop_recursive(5, 40, 4, |inner| {
        prop_oneof![
            (dotted(), inner.clone()).prop_map(|(k, d)| format!("${{oc.select:{k},{d}}}")),
            inner
                .clone()
                .prop_map(|d| format!("${{oc.env:UNSET_X,{d}}}")),
            inner.clone().prop_map(|d| format!("${{oc.decode:'{d}'}}")),
            inner.clone().prop_map(|d| format!("${{oc.decode:{d}}}")),
            (ident(), inner.clone()).prop_map(|(k, d)| format!("${{{k}.{d}}}")),
            inner.clone().prop_map(|d| format!("${{{d}}}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}_{b}")),
            prop::collection::vec(inner.clone(), 0..3)
                .prop_map(|v| format!("${{oc.select:x,[{}]}}", v.join(", "))),
            (ident(), inner.clone()).prop_map(|(k, v)| format!("${{oc.select:x,{{{k}: {v}}}}}")),
            (
                words(&["nope", "oc.create", "oc.env", "now"]),
                inner.clone()
            )
                .prop_map(|(f, a)| format!("${{{f}:{a}}}")),
            (inner.clone(), noisy(4)).prop_map(|(a, n)| format!("{a}{n}")),
        ]
    })
}

/// One override value element in Hydra's grammar (recursive).
pub fn element() -> impl Strategy<Value = String> + Clone {
    let leaf = prop_oneof![
        number(),
        words(&["true", "False", "NULL", "null", "???", "", " x ", "a b", "/path/to", "cuda:0"]),
        ident(),
        "[a-z ,:=\\\\\"]{0,6}".prop_map(|s| format!("'{s}'")),
        "[a-z ,:='\\\\]{0,6}".prop_map(|s| format!("\"{s}\"")),
        interpolation(),
        noisy(6),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        let fname = words(&[
            "choice", "range", "glob", "interval", "sort", "int", "float", "str", "bool", "tag",
            "shuffle", "nope",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((ident(), inner.clone()), 0..4).prop_map(|kv| {
                let items: Vec<String> = kv.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", items.join(", "))
            }),
            (
                fname,
                prop::collection::vec(inner.clone(), 0..4),
                prop::option::of(inner)
            )
                .prop_map(|(f, args, kw)| {
                    let mut a = args;
                    if let Some(v) = kw {
                        a.push(format!("reverse={v}"));
                    }
                    format!("{f}({})", a.join(", "))
                }),
        ]
    })
}

/// A whole command-line override: prefix, key or group, package, value or sweep.
pub fn override_line() -> impl Strategy<Value = String> + Clone {
    let key = prop_oneof![
        3 => dotted(),
        1 => words(&["db", "m", "g/sub", "hydra/launcher", "hydra.job.chdir", "hydra.run"]),
        1 => noisy(6),
    ];
    let value = prop_oneof![
        4 => element(),
        1 => prop::collection::vec(element(), 2..4).prop_map(|v| v.join(",")),
        1 => words(&["o1", "o2", "o3", "[o1,o2]", "null", "5"]),
    ];
    (
        words(&["", "", "+", "++", "~"]),
        key,
        prop::option::of(prop_oneof![
            words(&["", "_global_", "pkg", "a.b"]),
            noisy(4)
        ]),
        prop::option::of(value),
    )
        .prop_map(|(prefix, key, pkg, value)| {
            let mut s = format!("{prefix}{key}");
            if let Some(p) = pkg {
                s.push('@');
                s.push_str(&p);
            }
            if let Some(v) = value {
                s.push('=');
                s.push_str(&v);
            }
            s
        })
}

/// Long inputs: one fragment repeated up to 50 000 times (super-linear work shows as a hang).
pub fn repeated(fragments: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    (select(fragments.to_vec()), 1usize..50_000).prop_map(|(f, n)| f.repeat(n))
}

/// Deep shapes: `n` openers, a core, `n` closers (overrides, YAML flow, interpolations).
pub fn deep(
    open: &'static [&'static str],
    close: &'static [&'static str],
) -> impl Strategy<Value = String> + Clone {
    (0..open.len(), 1usize..4000)
        .prop_map(move |(i, n)| format!("{}1{}", open[i].repeat(n), close[i].repeat(n)))
}

/// A YAML value in flow style (recursive), with anchors, aliases and odd scalars.
pub fn yaml_flow() -> impl Strategy<Value = String> + Clone {
    let leaf = prop_oneof![
        number(),
        words(&[
            "yes",
            "No",
            "on",
            "~",
            "null",
            "'???'",
            "???",
            "\"\\u00e9\"",
            "!!str 5",
            "!!int x",
            "'it''s'",
            "\"a\\tb\"",
            "*a",
            "*b",
            "*nope",
            "''",
            "<<",
            "2001-01-01",
            ".NaN",
            "'<<'",
            "'='",
            "'1:30'",
            "'a: b'",
            "' lead'",
            "'x #y'",
            "'- x'",
            "'{a'",
            "'!t'",
        ]),
        ident(),
        interpolation().prop_map(|s| format!("'{}'", s.replace('\'', "''"))),
    ];
    leaf.prop_recursive(5, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| format!("[{}]", v.join(", "))),
            prop::collection::vec((ident(), inner.clone()), 0..5).prop_map(|kv| {
                let items: Vec<String> = kv.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                format!("{{{}}}", items.join(", "))
            }),
            (words(&["&a ", "&b ", ""]), inner.clone()).prop_map(|(a, v)| format!("{a}{v}")),
            inner.clone().prop_map(|v| format!("{{<<: {v}, x: 1}}")),
        ]
    })
}

/// A YAML document: block mappings of flow values, optional header, some noise.
pub fn yaml_doc() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        6 => prop::collection::vec((ident(), yaml_flow(), any::<bool>()), 0..6).prop_map(|kv| {
            let mut out = String::new();
            for (k, v, nested) in kv {
                if nested {
                    out.push_str(&format!("{k}:\n  inner: {v}\n  <<: {{z: 1}}\n"));
                } else {
                    out.push_str(&format!("{k}: {v}\n"));
                }
            }
            out
        }),
        1 => yaml_flow(),
        1 => noisy(40),
        1 => deep(&["[", "{a: ", "- "], &["]", "}", ""]),
        2 => prop::collection::vec(select(SNIPPETS.to_vec()), 1..6).prop_map(|v| v.concat()),
        1 => (1usize..8).prop_map(alias_bomb),
        1 => (1usize..600).prop_map(block_nesting),
        1 => repeated(&[
            "[", "{a: ", "- ", "&a ", "*a ", "a: ", "? ", "'", "\"\\", "#", " ", "\n", "a: b\n",
            "- [x]\n", "!!str ", "<<: {a: 1}\n", "${", ":",
        ]),
    ]
}

/// YAML odds and ends: documents, block scalars, complex keys, tags, directives, comments.
const SNIPPETS: &[&str] = &[
    "---\n",
    "...\n",
    "a: |\n  text\n  more\n",
    "b: >-\n  folded\n  text\n",
    "? [k]\n: v\n",
    "c: !!float 1\n",
    "d: 'multi\n  line'\n",
    "e: \"esc \\x41 \\u263A\"\n",
    "# comment\n",
    "- item\n",
    "f: [a, {b: c}]\n",
    "%YAML 1.1\n---\n",
    "&x a: *x\n",
    "<<: {m: 1}\n",
    "g: 0b1_0\n",
    "h: 1:20:30\n",
    "i: 2001-12-14t21:59:43.10-05:00\n",
    "j: -.inf\n",
    "k: !!null ''\n",
    "\t\n",
    "l: @x\n",
    "m: !!binary aGk=\n",
    "n: {? a : b}\n",
    "o:\n- 1\n- 2\n",
    "p: \"\\\n\"\n",
    "q: '${a}:'\n",
    "r: x # c\n",
    "s: a:b\n",
    "t: [a,b]: c\n",
    "u: !tag x\n",
];

/// Each level aliases the one before ten times ("billion laughs").
fn alias_bomb(levels: usize) -> String {
    let mut s = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n".to_string();
    for i in 1..=levels {
        let items = vec![format!("*l{}", i - 1); 10].join(", ");
        s.push_str(&format!("l{i}: &l{i} [{items}]\n"));
    }
    s
}

fn block_nesting(n: usize) -> String {
    (0..n)
        .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
        .collect::<String>()
        + &"  ".repeat(n)
        + "v: 1\n"
}
