//! The head of an Itanium-mangled kernel name, written as C++. Kineto reports some kernels it
//! could not demangle (deep CUTLASS templates such as torch._grouped_mm's) as
//! `_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm…`. This reads
//! nested names, source names, builtin types and integer literals; at anything else
//! (substitutions, function types, qualifiers) it stops and writes `…`, closing what is open.

/// `_ZN7cutlass13device_kernelIN2at…` → `cutlass::device_kernel<at::cuda::detail::…<…>>`;
/// `None` when `s` is not a mangled name or its name cannot be read.
pub(super) fn demangle_head(s: &str) -> Option<String> {
    let rest = s.strip_prefix("_Z")?;
    let mut m = Mangled {
        s: rest.as_bytes(),
        i: 0,
    };
    m.name().map(|(name, _)| name)
}

struct Mangled<'a> {
    s: &'a [u8],
    i: usize,
}

/// Text read so far and whether reading can go on after it (`false`: it ends in `…`).
type Read = (String, bool);

impl Mangled<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }

    /// `<length><identifier>`.
    fn source_name(&mut self) -> Option<String> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let len: usize = std::str::from_utf8(&self.s[start..self.i])
            .ok()?
            .parse()
            .ok()?;
        let name = self.s.get(self.i..self.i + len)?;
        self.i += len;
        Some(String::from_utf8_lossy(name).into_owned())
    }

    /// A nested name `N … E` or one source name, each part optionally with template arguments.
    fn name(&mut self) -> Option<Read> {
        if !self.eat(b'N') {
            let name = self.source_name()?;
            if !self.eat(b'I') {
                return Some((name, true));
            }
            let (args, ok) = self.template_args();
            return Some((format!("{name}<{args}>"), ok));
        }
        let mut parts: Vec<String> = Vec::new();
        loop {
            match self.peek() {
                Some(b'E') => {
                    self.i += 1;
                    return Some((parts.join("::"), true));
                }
                Some(b'I') if !parts.is_empty() => {
                    self.i += 1;
                    let (args, ok) = self.template_args();
                    let last = parts.pop()?;
                    parts.push(format!("{last}<{args}>"));
                    if !ok {
                        return Some((parts.join("::"), false));
                    }
                }
                Some(c) if c.is_ascii_digit() => parts.push(self.source_name()?),
                _ if parts.is_empty() => return None,
                _ => {
                    parts.push("…".into());
                    return Some((parts.join("::"), false));
                }
            }
        }
    }

    /// Template arguments after `I`, through their `E`.
    fn template_args(&mut self) -> Read {
        let mut args: Vec<String> = Vec::new();
        loop {
            if self.eat(b'E') {
                return (args.join(", "), true);
            }
            match self.arg() {
                Some((arg, true)) => args.push(arg),
                Some((arg, false)) => {
                    args.push(arg);
                    return (args.join(", "), false);
                }
                None => {
                    args.push("…".into());
                    return (args.join(", "), false);
                }
            }
        }
    }

    fn arg(&mut self) -> Option<Read> {
        let builtin = match self.peek()? {
            b'N' | b'0'..=b'9' => return self.name(),
            b'L' => return self.literal(),
            c => builtin(c)?,
        };
        self.i += 1;
        Some((builtin.into(), true))
    }

    /// `L <builtin type> [n] <digits> E`: `Li128E` → `128`, `Lb0E` → `false`.
    fn literal(&mut self) -> Option<Read> {
        self.i += 1;
        let ty = self.peek().filter(|&c| builtin(c).is_some())?;
        self.i += 1;
        let negative = self.eat(b'n');
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let digits = std::str::from_utf8(&self.s[start..self.i])
            .ok()?
            .to_string();
        if digits.is_empty() || !self.eat(b'E') {
            return None;
        }
        Some(match (ty, digits.as_str()) {
            (b'b', "0") => ("false".into(), true),
            (b'b', "1") => ("true".into(), true),
            _ if negative => (format!("-{digits}"), true),
            _ => (digits, true),
        })
    }
}

/// Itanium's one-letter builtin types.
fn builtin(c: u8) -> Option<&'static str> {
    Some(match c {
        b'v' => "void",
        b'b' => "bool",
        b'c' => "char",
        b'a' => "signed char",
        b'h' => "unsigned char",
        b's' => "short",
        b't' => "unsigned short",
        b'i' => "int",
        b'j' => "unsigned int",
        b'l' => "long",
        b'm' => "unsigned long",
        b'x' => "long long",
        b'y' => "unsigned long long",
        b'f' => "float",
        b'd' => "double",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutlass_device_kernel_from_kineto() {
        // As Kineto printed it on an H100 (torch._grouped_mm), cut after the first names.
        assert_eq!(
            demangle_head("_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm6kernelEEEEvNT_6ParamsE")
                .as_deref(),
            Some("cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<…>>")
        );
    }

    #[test]
    fn names_types_and_literals() {
        assert_eq!(demangle_head("_Z6kernelPf").as_deref(), Some("kernel"));
        assert_eq!(
            demangle_head("_ZN2at6native18elementwise_kernelILi128ELi4EfLb1ELin2EEEviT1_")
                .as_deref(),
            Some("at::native::elementwise_kernel<128, 4, float, true, -2>")
        );
        assert_eq!(
            demangle_head("_Z5gemm1IN3foo3BarEjE").as_deref(),
            Some("gemm1<foo::Bar, unsigned int>")
        );
        assert_eq!(demangle_head("nvjet_sm90"), None);
        assert_eq!(demangle_head("_Z"), None);
        assert_eq!(demangle_head("_ZN"), None);
        assert_eq!(demangle_head("_Z99short"), None);
        assert_eq!(demangle_head("_ZN3fooILi"), Some("foo<…>".into()));
    }
}
