//! The FIX tag=value parser: framing ([`frame`]), validation of BeginString (8), BodyLength (9)
//! and CheckSum (10), typed header fields ([`Header`]) and repeating groups ([`Groups`]).
//!
//! Every value is a slice of the input: nothing is allocated per field or per group entry.
//! Input is untrusted, so the module indexes nothing directly and unwraps nothing; every error
//! names the byte offset (from the start of the message) and the tag it concerns.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

/// The field delimiter, SOH (0x01).
pub const SOH: u8 = 0x01;

/// The longest body accepted (BodyLength); a larger one is taken for garbage.
pub const MAX_BODY: usize = 1 << 20;

/// Why bytes are not a FIX message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FixError {
    /// The buffer holds only the beginning of a message: read more.
    #[error("incomplete message")]
    Incomplete,
    /// The frame itself is wrong (BeginString, BodyLength or the trailer's place): the stream
    /// cannot be trusted up to the next `8=`.
    #[error("byte {offset}, tag {tag}: {reason}")]
    Garbled {
        /// Byte offset from the start of the message.
        offset: usize,
        /// The tag concerned (8, 9 or 10).
        tag: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// CheckSum (10) differs from the sum of the bytes before it.
    #[error("byte {offset}, tag 10: CheckSum {declared:03} given, {computed:03} computed")]
    Checksum {
        /// Byte offset of `10=`.
        offset: usize,
        /// The value sent.
        declared: u8,
        /// The value of the bytes received.
        computed: u8,
    },
    /// A field is not `tag=value<SOH>`, or its value is not of the tag's type.
    #[error("byte {offset}, tag {tag}: {reason}")]
    BadField {
        /// Byte offset of the field.
        offset: usize,
        /// The tag (0 when the tag itself is unreadable).
        tag: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// A required tag is absent.
    #[error("byte {offset}: required tag {tag} is missing")]
    MissingTag {
        /// Byte offset where it was looked for (the start of the body or group entry).
        offset: usize,
        /// The tag missing.
        tag: u32,
    },
    /// A repeating group has another number of entries than its count field says.
    #[error("byte {offset}, tag {tag}: {declared} entries declared, {found} found")]
    GroupCount {
        /// Byte offset of the count field.
        offset: usize,
        /// The count tag (e.g. 268 NoMDEntries).
        tag: u32,
        /// The count given.
        declared: usize,
        /// The entries present.
        found: usize,
    },
}

impl FixError {
    /// The byte offset the error concerns (0 for [`FixError::Incomplete`]).
    pub fn offset(&self) -> usize {
        match self {
            FixError::Incomplete => 0,
            FixError::Garbled { offset, .. }
            | FixError::Checksum { offset, .. }
            | FixError::BadField { offset, .. }
            | FixError::MissingTag { offset, .. }
            | FixError::GroupCount { offset, .. } => *offset,
        }
    }

    /// The tag the error concerns (0 if none or unreadable).
    pub fn tag(&self) -> u32 {
        match self {
            FixError::Incomplete => 0,
            FixError::Checksum { .. } => 10,
            FixError::Garbled { tag, .. }
            | FixError::BadField { tag, .. }
            | FixError::MissingTag { tag, .. }
            | FixError::GroupCount { tag, .. } => *tag,
        }
    }

    /// True if the frame cannot be trusted (garbled or wrong checksum): FIX says such a
    /// message is ignored, with no Reject and no sequence number consumed.
    pub fn is_garbled(&self) -> bool {
        matches!(self, FixError::Garbled { .. } | FixError::Checksum { .. })
    }
}

/// One field: its tag, its value (borrowed), and where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    /// The tag number.
    pub tag: u32,
    /// The value's bytes (never empty).
    pub value: &'a [u8],
    /// Byte offset of the field from the start of the message.
    pub offset: usize,
}

impl<'a> Field<'a> {
    /// The value as an unsigned integer.
    pub fn as_u64(&self) -> Result<u64, FixError> {
        parse_u64(self.value).ok_or(self.bad("not an unsigned integer"))
    }

    /// The value as a decimal number.
    pub fn as_f64(&self) -> Result<f64, FixError> {
        parse_f64(self.value).ok_or(self.bad("not a number"))
    }

    /// The value as UTF-8 text.
    pub fn as_str(&self) -> Result<&'a str, FixError> {
        std::str::from_utf8(self.value).map_err(|_| self.bad("not UTF-8"))
    }

    /// A [`FixError::BadField`] about this field.
    pub fn bad(&self, reason: &'static str) -> FixError {
        FixError::BadField { offset: self.offset, tag: self.tag, reason }
    }
}

/// An unsigned decimal integer (digits only, at most 19).
pub fn parse_u64(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    let mut n: u64 = 0;
    for &b in v {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(b - b'0');
    }
    Some(n)
}

/// A FIX decimal (`-12.5`, `3`, `.25`): no exponent, no sign other than a leading minus.
pub fn parse_f64(v: &[u8]) -> Option<f64> {
    let digits = v.strip_prefix(b"-").unwrap_or(v);
    if digits.is_empty() || !digits.iter().all(|&b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// Reads the fields of a slice of a message, one at a time, without allocating.
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf` in the message, for error offsets.
    base: usize,
}

impl<'a> Fields<'a> {
    /// The fields of `buf`, which starts `base` bytes into its message.
    pub fn new(buf: &'a [u8], base: usize) -> Fields<'a> {
        Fields { buf, pos: 0, base }
    }

    /// The byte offset (in the message) of the next field.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// The fields not read yet, as bytes.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// The next field's tag without reading it (`None` at the end or if unreadable).
    pub fn peek_tag(&self) -> Option<u32> {
        self.clone().next().and_then(Result::ok).map(|f| f.tag)
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, FixError>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.buf.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        let r = read_field(rest, self.base + self.pos);
        match r {
            Ok((_, used)) => self.pos += used,
            Err(_) => self.pos = self.buf.len(),
        }
        Some(r.map(|(f, _)| f))
    }
}

/// The field at the start of `rest` (which is `offset` bytes into the message) and the bytes
/// it takes, SOH included.
fn read_field(rest: &[u8], offset: usize) -> Result<(Field<'_>, usize), FixError> {
    let mut tag: u32 = 0;
    let mut i = 0;
    loop {
        match rest.get(i) {
            Some(b'=') if i > 0 => break,
            Some(&c) if c.is_ascii_digit() && i < 9 => tag = tag * 10 + u32::from(c - b'0'),
            _ => {
                return Err(FixError::BadField { offset: offset + i, tag: 0, reason: "a tag is 1 to 9 digits and '='" })
            }
        }
        i += 1;
    }
    if tag == 0 {
        return Err(FixError::BadField { offset, tag, reason: "tag 0 does not exist" });
    }
    let value_start = i + 1;
    let tail = rest.get(value_start..).unwrap_or_default();
    let Some(len) = tail.iter().position(|&b| b == SOH) else {
        return Err(FixError::BadField { offset, tag, reason: "the value does not end with SOH" });
    };
    if len == 0 {
        return Err(FixError::BadField { offset, tag, reason: "empty value" });
    }
    let value = tail.get(..len).unwrap_or_default();
    Ok((Field { tag, value, offset }, value_start + len + 1))
}

/// BeginString values accepted: FIX 4.0 to 4.4 and FIXT 1.1 (FIX 5.0 SP2's session layer).
fn known_begin_string(v: &[u8]) -> bool {
    matches!(v, b"FIX.4.4" | b"FIX.4.2" | b"FIX.4.3" | b"FIX.4.1" | b"FIX.4.0" | b"FIXT.1.1")
}

/// [`FixError::Incomplete`] if `part` (no SOH yet, shorter than `max`) may still become a
/// field starting with `prefix`.
fn unfinished(part: &[u8], prefix: &[u8], max: usize) -> Option<FixError> {
    let n = part.len().min(prefix.len());
    let may = !part.contains(&SOH) && part.len() < max && part.get(..n) == prefix.get(..n);
    may.then_some(FixError::Incomplete)
}

/// Where the parts of a framed message are.
#[derive(Debug, Clone, Copy)]
struct Frame {
    begin_string_end: usize,
    body_start: usize,
    trailer_start: usize,
    len: usize,
}

fn garbled(offset: usize, tag: u32, reason: &'static str) -> FixError {
    FixError::Garbled { offset, tag, reason }
}

/// The length of the first message in `buf`; [`FixError::Incomplete`] if `buf` holds only its
/// start, [`FixError::Garbled`] if its BeginString, BodyLength or trailer is wrong. The
/// checksum is not checked here ([`parse`] does).
pub fn frame(buf: &[u8]) -> Result<usize, FixError> {
    locate(buf).map(|f| f.len)
}

fn locate(buf: &[u8]) -> Result<Frame, FixError> {
    let (f8, used8) = read_field(buf, 0)
        .map_err(|_| unfinished(buf, b"8=FIX", 12).unwrap_or(garbled(0, 8, "a message starts with 8=BeginString")))?;
    if f8.tag != 8 || !known_begin_string(f8.value) {
        return Err(garbled(0, 8, "a message starts with 8=FIX.4.x or 8=FIXT.1.1"));
    }
    let rest = buf.get(used8..).unwrap_or_default();
    let bad9 = garbled(used8, 9, "BodyLength (9) must follow BeginString");
    let (f9, used9) = read_field(rest, used8).map_err(|_| unfinished(rest, b"9=", 10).unwrap_or(bad9.clone()))?;
    if f9.tag != 9 || f9.value.len() > 7 {
        return Err(bad9);
    }
    let body_len = parse_u64(f9.value).ok_or(garbled(used8, 9, "BodyLength is not a number"))? as usize;
    if body_len > MAX_BODY {
        return Err(garbled(used8, 9, "BodyLength is too large"));
    }
    let body_start = used8 + used9;
    let trailer_start = body_start + body_len;
    let len = trailer_start + 7;
    let Some(trailer) = buf.get(trailer_start..len) else {
        return Err(FixError::Incomplete);
    };
    let ends_field = body_len == 0 || buf.get(trailer_start - 1) == Some(&SOH);
    if !ends_field || !trailer.starts_with(b"10=") || trailer.last() != Some(&SOH) {
        return Err(garbled(used8, 9, "BodyLength does not end where CheckSum (10) starts"));
    }
    Ok(Frame { begin_string_end: used8, body_start, trailer_start, len })
}

/// The typed standard-header fields of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// BeginString (8), e.g. `FIX.4.4`.
    pub begin_string: &'a [u8],
    /// MsgType (35), e.g. `W`.
    pub msg_type: &'a [u8],
    /// SenderCompID (49).
    pub sender: &'a [u8],
    /// TargetCompID (56).
    pub target: &'a [u8],
    /// MsgSeqNum (34).
    pub seq: u64,
    /// SendingTime (52), as sent (see [`crate::time::parse_timestamp`]).
    pub sending_time: &'a [u8],
    /// PossDupFlag (43) is `Y`.
    pub poss_dup: bool,
    /// OrigSendingTime (122), if given.
    pub orig_sending_time: Option<&'a [u8]>,
}

/// One checked message: its frame, checksum and header verified, every field readable.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// The whole message, `8=` to the SOH after CheckSum.
    pub raw: &'a [u8],
    /// Its header fields.
    pub header: Header<'a>,
    body_start: usize,
    trailer_start: usize,
}

/// Parse and check the first message of `buf` (see [`Message::len`] for the bytes it takes).
pub fn parse(buf: &[u8]) -> Result<Message<'_>, FixError> {
    let f = locate(buf)?;
    let raw = buf.get(..f.len).ok_or(FixError::Incomplete)?;
    let declared = raw
        .get(f.trailer_start + 3..f.trailer_start + 6)
        .and_then(parse_u64)
        .filter(|&n| n < 256)
        .ok_or(FixError::BadField { offset: f.trailer_start, tag: 10, reason: "CheckSum is three digits" })?;
    let computed = checksum(raw.get(..f.trailer_start).unwrap_or_default());
    if declared as u8 != computed {
        return Err(FixError::Checksum { offset: f.trailer_start, declared: declared as u8, computed });
    }
    let begin_string = raw.get(2..f.begin_string_end - 1).unwrap_or_default();
    let body = raw.get(f.body_start..f.trailer_start).unwrap_or_default();
    let header = read_header(begin_string, body, f.body_start)?;
    Ok(Message { raw, header, body_start: f.body_start, trailer_start: f.trailer_start })
}

/// The FIX checksum: the sum of the bytes, modulo 256.
pub fn checksum(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |s, &b| s.wrapping_add(b))
}

/// Read the header fields from the body, checking that every field of it is readable.
fn read_header<'a>(begin_string: &'a [u8], body: &'a [u8], base: usize) -> Result<Header<'a>, FixError> {
    let mut fields = Fields::new(body, base);
    let first =
        fields.next().transpose()?.filter(|f| f.tag == 35).ok_or(FixError::MissingTag { offset: base, tag: 35 })?;
    let mut h = Header {
        begin_string,
        msg_type: first.value,
        sender: b"",
        target: b"",
        seq: 0,
        sending_time: b"",
        poss_dup: false,
        orig_sending_time: None,
    };
    for f in fields {
        let f = f?;
        match f.tag {
            49 if h.sender.is_empty() => h.sender = f.value,
            56 if h.target.is_empty() => h.target = f.value,
            34 if h.seq == 0 => {
                h.seq = f.as_u64().ok().filter(|&n| n > 0).ok_or(f.bad("MsgSeqNum is a positive integer"))?
            }
            52 if h.sending_time.is_empty() => h.sending_time = f.value,
            43 => {
                h.poss_dup = match f.value {
                    b"Y" => true,
                    b"N" => false,
                    _ => return Err(f.bad("PossDupFlag is Y or N")),
                }
            }
            122 => h.orig_sending_time = Some(f.value),
            _ => {}
        }
    }
    for (tag, missing) in
        [(49, h.sender.is_empty()), (56, h.target.is_empty()), (34, h.seq == 0), (52, h.sending_time.is_empty())]
    {
        if missing {
            return Err(FixError::MissingTag { offset: base, tag });
        }
    }
    Ok(h)
}

impl<'a> Message<'a> {
    /// The bytes the message takes in the buffer it was parsed from.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Never true: a message has at least its header and trailer (for clippy's `len` rule).
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// MsgType (35) as text (`""` if not UTF-8).
    pub fn msg_type(&self) -> &'a str {
        std::str::from_utf8(self.header.msg_type).unwrap_or_default()
    }

    /// The body's fields, from MsgType (35) to the last before CheckSum (10).
    pub fn fields(&self) -> Fields<'a> {
        Fields::new(self.raw.get(self.body_start..self.trailer_start).unwrap_or_default(), self.body_start)
    }

    /// The first field with `tag` (the body was checked readable by [`parse`]).
    pub fn field(&self, tag: u32) -> Option<Field<'a>> {
        self.fields().flatten().find(|f| f.tag == tag)
    }

    /// The value of the first field with `tag`.
    pub fn get(&self, tag: u32) -> Option<&'a [u8]> {
        self.field(tag).map(|f| f.value)
    }

    /// The field with `tag`, or [`FixError::MissingTag`].
    pub fn require(&self, tag: u32) -> Result<Field<'a>, FixError> {
        self.field(tag).ok_or(FixError::MissingTag { offset: self.body_start, tag })
    }

    /// The entries of the repeating group counted by `count_tag` (e.g. 268 NoMDEntries),
    /// each starting with `first_tag` and holding the fields for which `member` is true.
    /// `Ok(None)` if the message has no `count_tag`.
    pub fn group(
        &self,
        count_tag: u32,
        first_tag: u32,
        member: fn(u32) -> bool,
    ) -> Result<Option<Groups<'a>>, FixError> {
        let mut fields = self.fields();
        while let Some(f) = fields.next() {
            let f = f?;
            if f.tag == count_tag {
                let declared = f.as_u64().map_err(|_| f.bad("a group count is an unsigned integer"))? as usize;
                return Ok(Some(Groups {
                    fields,
                    count_tag,
                    count_offset: f.offset,
                    first_tag,
                    member,
                    declared,
                    found: 0,
                }));
            }
        }
        Ok(None)
    }
}

/// The entries of one repeating group, read one at a time without allocating.
#[derive(Debug, Clone)]
pub struct Groups<'a> {
    fields: Fields<'a>,
    count_tag: u32,
    count_offset: usize,
    first_tag: u32,
    member: fn(u32) -> bool,
    declared: usize,
    found: usize,
}

impl Groups<'_> {
    /// The number of entries the count field declares.
    pub fn declared(&self) -> usize {
        self.declared
    }

    fn count_error(&self, found: usize) -> FixError {
        FixError::GroupCount { offset: self.count_offset, tag: self.count_tag, declared: self.declared, found }
    }
}

impl<'a> Iterator for Groups<'a> {
    type Item = Result<Entry<'a>, FixError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.found == self.declared {
            // One more entry than declared is an error too.
            let more = self.fields.peek_tag() == Some(self.first_tag);
            self.found += 1;
            return more.then(|| Err(self.count_error(self.declared + 1)));
        }
        if self.found > self.declared {
            return None;
        }
        let start = self.fields.clone();
        if self.fields.peek_tag() != Some(self.first_tag) {
            let found = self.found;
            self.found = self.declared + 1;
            return Some(Err(self.count_error(found)));
        }
        let mut taken = 0;
        let mut first = true;
        loop {
            let at = self.fields.rest().len();
            match self.fields.peek_tag() {
                Some(t) if first || (t != self.first_tag && (self.member)(t)) => {
                    first = false;
                    self.fields.next();
                    taken += at - self.fields.rest().len();
                }
                _ => break,
            }
        }
        self.found += 1;
        let bytes = start.rest().get(..taken).unwrap_or_default();
        Some(Ok(Entry { bytes, offset: start.offset() }))
    }
}

/// One entry of a repeating group: a run of fields in the message.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Entry<'a> {
    /// The entry's fields (readable: [`parse`] checked the whole body).
    pub fn fields(&self) -> impl Iterator<Item = Field<'a>> {
        Fields::new(self.bytes, self.offset).flatten()
    }

    /// The value of the entry's first field with `tag`.
    pub fn get(&self, tag: u32) -> Option<&'a [u8]> {
        self.fields().find(|f| f.tag == tag).map(|f| f.value)
    }

    /// Byte offset of the entry from the start of the message.
    pub fn offset(&self) -> usize {
        self.offset
    }
}
