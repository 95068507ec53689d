// Typing and the generic path of the pickle decoder (pickle_decoder.h): every dict is typed by
// its keys (schema.h, RecordTypedBy) when items are first set on it, and its items are set through
// the schema's setters with PickleField, the decoder's view of one field of one record.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "memsnap/util/status_macros.h"
#include "parse/pickle_decoder.h"

namespace memsnap::parse::pickle {

// One field of one record as the schema's setters see it (the contract is in schema.h): typed
// extraction with messages that name the byte offset, the record kind and the key.
class PickleField {
 public:
  using Value = pickle::Value;
  PickleField(Decoder& d, size_t at, Rec rec, Key key, uint32_t record)
      : d_(d), at_(at), rec_(rec), key_(key), record_(record) {}

  absl::StatusOr<int64_t> Int(const Value& v) {
    if (v.tag == Tag::kInt || v.tag == Tag::kBool) [[likely]]
      return v.i;
    return d_.AsInt(at_, rec_, key_, v);
  }
  absl::StatusOr<uint64_t> Address(const Value& v) {
    if (v.tag == Tag::kInt) [[likely]]
      return static_cast<uint64_t>(v.i);
    return d_.AsAddress(at_, rec_, key_, v);
  }
  bool IsWide(const Value& v) const { return v.tag == Tag::kUInt64 || v.tag == Tag::kHugeInt; }
  bool IsNone(const Value& v) const { return v.tag == Tag::kNone; }
  bool IsList(const Value& v) const { return v.tag == Tag::kList; }
  std::optional<int64_t> IntOrBool(const Value& v) const {
    if (v.tag == Tag::kInt || v.tag == Tag::kBool) return v.i;
    return std::nullopt;
  }
  absl::StatusOr<StrId> Str(const Value& v) {
    if (v.tag == Tag::kStr) return StrId(v.ref);
    return TypeError(v, "str");
  }
  std::optional<StrId> MaybeStr(const Value& v) const {
    if (v.tag == Tag::kStr) return StrId(v.ref);
    return std::nullopt;
  }
  absl::StatusOr<std::string_view> Text(const Value& v) {
    ASSIGN_OR_RETURN(StrId id, Str(v));
    return d_.snap_.strings.Get(id);
  }
  absl::StatusOr<Action> ActionOf(const Value& v) {
    ASSIGN_OR_RETURN(StrId id, Str(v));
    return d_.ActionOf(id);
  }
  absl::StatusOr<bool> Bool(const Value& v) {
    if (v.tag == Tag::kBool || v.tag == Tag::kInt) return v.i != 0;
    return TypeError(v, "bool");
  }
  std::optional<double> Number(const Value& v) const {
    if (v.tag == Tag::kInt) return static_cast<double>(v.i);
    if (v.tag != Tag::kFloat) return std::nullopt;
    double d;
    std::memcpy(&d, &v.i, sizeof d);
    return d;
  }
  absl::StatusOr<StackId> Stack(const Value& v) {
    if (v.tag == Tag::kList && d_.lists_[v.ref].stack.valid()) [[likely]] {
      return d_.lists_[v.ref].stack;  // a shared traceback seen before
    }
    return d_.AsStack(at_, rec_, v);
  }
  absl::StatusOr<StreamId> Stream(const Value& v) {
    ASSIGN_OR_RETURN(uint64_t value, Address(v));
    const StreamId id = d_.snap_.streams.Intern(static_cast<int64_t>(value));
    if (!id.valid()) [[unlikely]]
      return Error(TooManyStreams());
    return id;
  }
  absl::StatusOr<PoolId> Pool(const Value& v) { return d_.AsPool(at_, rec_, key_, v); }
  std::optional<StrId> DictText(const Value& v) {
    if (v.tag != Tag::kDict && v.tag != Tag::kEventRef && v.tag != Tag::kFrameRef) {
      return std::nullopt;
    }
    return d_.InternText(d_.RenderText(v, 0));
  }
  template <typename Fn>
  absl::Status ForEachItem(const Value& v, Fn&& fn) {
    if (v.tag != Tag::kDict || d_.dicts_[v.ref].kind != Rec::kGeneric) return absl::OkStatus();
    for (const auto& [k, x] : d_.generic_[d_.dicts_[v.ref].record].items) {
      if (k.tag == Tag::kStr) fn(d_.snap_.strings.Get(StrId(k.ref)), x);
    }
    return absl::OkStatus();
  }
  template <typename Fn>
  absl::Status ForEachListItem(const Value& v, Fn&& fn) {
    if (v.tag != Tag::kList) return absl::OkStatus();
    const ListObj& l = d_.lists_[v.ref];
    RETURN_IF_ERROR(d_.Charge(at_, l.count));
    for (uint32_t k = 0; k < l.count; ++k) fn(d_.scratch_[l.begin + k]);
    return absl::OkStatus();
  }
  absl::Status TypeError(const Value& v, std::string_view want) {
    return d_.TypeError(at_, rec_, key_, v, want);
  }
  absl::Status Error(std::string_view message) {
    return d_.Error(at_,
                    absl::StrCat(RecName(rec_), " key '", Sv(KeyName(key_)), "': ", Sv(message)));
  }
  void Warn(std::string_view message) {
    d_.snap_.diagnostics.Warn(absl::StrCat("offset ", at_, ": ", Sv(message)));
  }
  // Paths are known once the records are assembled: Finish resolves the record number.
  void Limit(Limited kind, int64_t read) { d_.limits_.NoteRecord(kind, read, record_); }
  void Limit(Limited kind, uint64_t read) { d_.limits_.NoteRecord(kind, read, record_); }
  StrId NotAvailable() const { return d_.na_; }
  EventExtra& Extra() { return d_.ExtraOf(record_); }
  absl::Status Blocks(const Value& v, SegmentRec& rec) {
    ASSIGN_OR_RETURN(auto range, d_.AsRecordRange(at_, "segment key 'blocks'", Rec::kBlock, v));
    rec.blocks_begin = range.first;
    rec.blocks_count = range.second;
    return absl::OkStatus();
  }
  absl::Status History(const Value& v, BlockRec& rec) {
    ASSIGN_OR_RETURN(auto range, d_.AsRecordRange(at_, "block key 'history'", Rec::kHistory, v));
    if (range.second > 0) rec.history = d_.history_[range.first];
    return absl::OkStatus();
  }

 private:
  Decoder& d_;
  size_t at_;
  Rec rec_;
  Key key_;
  uint32_t record_;
};

Rec Decoder::Classify(const Value* items, size_t n) const {
  Rec rec = Rec::kGeneric;
  for (size_t k = 0; k < n; k += 2) rec = std::min(rec, RecordTypedBy(KeyOf(items[k])));
  return rec;
}

uint32_t Decoder::CreateRecord(Rec kind) {
  switch (kind) {
    case Rec::kEvent:
      snap_.events.emplace_back();
      EventAppended();
      return static_cast<uint32_t>(snap_.events.size() - 1);
    case Rec::kFrame:
      return 0;  // a frame's record is its FrameId, set once its items are known
    case Rec::kSegment:
      segments_.emplace_back();
      return static_cast<uint32_t>(segments_.size() - 1);
    case Rec::kBlock:
      blocks_.emplace_back();
      return static_cast<uint32_t>(blocks_.size() - 1);
    case Rec::kHistory:
      history_.emplace_back();
      return static_cast<uint32_t>(history_.size() - 1);
    case Rec::kAnnotation:
      annotations_.emplace_back();
      return static_cast<uint32_t>(annotations_.size() - 1);
    case Rec::kSettings:
      settings_.emplace_back();
      settings_.back().present = true;
      return static_cast<uint32_t>(settings_.size() - 1);
    case Rec::kTop:
      tops_.emplace_back();
      return static_cast<uint32_t>(tops_.size() - 1);
    case Rec::kGeneric:
    case Rec::kUnset:
      generic_.emplace_back();
      return static_cast<uint32_t>(generic_.size() - 1);
  }
  return 0;
}

absl::Status Decoder::SetItems(size_t at, const Value& dict, const Value* items, size_t n) {
  if (dict.tag == Tag::kEventRef) {
    // More items for a trace entry that the fast path decoded (legal, never written by PyTorch).
    if (n % 2 != 0) return Error(at, "SETITEMS with an odd number of items");
    return ApplyItems(at, Rec::kEvent, dict.ref, items, n);
  }
  if (dict.tag != Tag::kDict) {
    return Error(at, absl::StrCat("SETITEM(S) on a ", TagName(dict.tag), ", not a dict"));
  }
  if (n % 2 != 0) return Error(at, "SETITEMS with an odd number of items");
  DictObj& d = dicts_[dict.ref];
  if (d.kind == Rec::kUnset) {
    d.kind = Classify(items, n);
    d.record = CreateRecord(d.kind);
  } else if (d.kind == Rec::kGeneric) {
    // CPython sets a dict's items in batches of 1000, so the keys that type a dict may come in a
    // later batch (a snapshot dict with 1,001 other keys before 'segments'): a dict is typed by
    // all its keys. What the earlier batches set with known keys is applied first.
    if (Rec kind = Classify(items, n); kind != Rec::kGeneric) {
      std::vector<Value> all;
      for (const auto& [key, value] : generic_[d.record].items) {
        if (KeyOf(key) == Key::kOther) continue;
        RETURN_IF_ERROR(Charge(at, 1));
        all.push_back(key);
        all.push_back(value);
      }
      all.insert(all.end(), items, items + n);
      d.kind = kind;
      d.record = CreateRecord(kind);
      return SetItems(at, dict, all.data(), all.size());
    }
  }
  switch (d.kind) {
    case Rec::kFrame:
      return SetFrameDict(at, d, items, n);
    case Rec::kGeneric:
    case Rec::kUnset: {
      // Generic dicts are only rendered as text: keep them bounded, except for the items with
      // known keys, which a later batch may need (above).
      auto& g = generic_[d.record].items;
      for (size_t k = 0; k < n; k += 2) {
        if (g.size() < 4096 || KeyOf(items[k]) != Key::kOther) {
          g.emplace_back(items[k], items[k + 1]);
        }
      }
      return absl::OkStatus();
    }
    default:
      return ApplyItems(at, d.kind, d.record, items, n);
  }
}

absl::Status Decoder::SetFrameDict(size_t at, DictObj& d, const Value* items, size_t n) {
  // A frame is complete in one batch (its dict has three keys); intern it by content.
  Frame f{StringPool::kEmpty, StringPool::kEmpty, 0};
  for (size_t k = 0; k < n; k += 2) {
    const Key key = KeyOf(items[k]);
    PickleField field(*this, at, Rec::kFrame, key, 0);
    RETURN_IF_ERROR(SetFrame(field, FieldOf(Rec::kFrame, key), items[k + 1], f));
  }
  d.record = snap_.frames.Intern(f).v;
  // Later memo GETs of this dict yield the FrameId directly (frames are 75% of a file's GETs).
  if (d.memo_slot < memo_.size()) memo_[d.memo_slot] = PackMemo(Tag::kFrameRef, d.record);
  return absl::OkStatus();
}

absl::Status Decoder::ApplyItems(size_t at, Rec kind, uint32_t record, const Value* items,
                                 size_t n) {
  // Items set on an entry after later ones were created (legal, never written by PyTorch).
  if (kind == Rec::kEvent && record < published_) [[unlikely]]
    InvalidateEvents();
  for (size_t k = 0; k < n; k += 2) {
    // Non-string keys never occur in snapshots, and unknown keys are newer PyTorch's: ignored.
    const Key key = KeyOf(items[k]);
    const Field field = FieldOf(kind, key);
    if (field == Field::kNone) continue;
    const Value& v = items[k + 1];
    PickleField f(*this, at, kind, key, record);
    switch (kind) {
      case Rec::kEvent:
        RETURN_IF_ERROR(SetEvent(f, field, v, snap_.events[record]));
        break;
      case Rec::kSegment:
        RETURN_IF_ERROR(SetSegment(f, field, v, segments_[record]));
        break;
      case Rec::kBlock:
        RETURN_IF_ERROR(SetBlock(f, field, v, blocks_[record]));
        break;
      case Rec::kHistory:
        RETURN_IF_ERROR(SetHistory(f, field, v, history_[record]));
        break;
      case Rec::kAnnotation:
        RETURN_IF_ERROR(SetAnnotation(f, field, v, annotations_[record]));
        break;
      case Rec::kSettings:
        RETURN_IF_ERROR(SetSettings(f, field, v, settings_[record]));
        break;
      case Rec::kTop:
        SetTop<PickleField>(field, key, v, tops_[record]);
        break;
      default:
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status Decoder::TypeError(size_t at, Rec what, Key key, const Value& v,
                                std::string_view want) {
  return Error(at, absl::StrCat(RecName(what), " key '", Sv(KeyName(key)), "': expected ", Sv(want),
                                ", got ", TagName(v.tag)));
}

absl::StatusOr<int64_t> Decoder::AsInt(size_t at, Rec what, Key key, const Value& v) {
  switch (v.tag) {
    case Tag::kInt:
      return v.i;
    case Tag::kBool:
      return v.i;
    case Tag::kUInt64:
    case Tag::kHugeInt:
      snap_.diagnostics.Warn(absl::StrCat("offset ", at, ": ", Sv(RecName(what)), " key '",
                                          Sv(KeyName(key)),
                                          "': integer does not fit in 64 bits; clamped"));
      return v.tag == Tag::kUInt64 ? std::numeric_limits<int64_t>::max() : v.i;
    default:
      return TypeError(at, what, key, v, "int");
  }
}

absl::StatusOr<uint64_t> Decoder::AsAddress(size_t at, Rec what, Key key, const Value& v) {
  if (v.tag == Tag::kInt || v.tag == Tag::kUInt64) return static_cast<uint64_t>(v.i);
  if (v.tag == Tag::kHugeInt) return AsInt(at, what, key, v);
  return TypeError(at, what, key, v, "int");
}

absl::StatusOr<StackId> Decoder::AsStack(size_t at, Rec what, const Value& v) {
  if (v.tag == Tag::kNone) return StackId();
  if (v.tag == Tag::kTuple) {
    // A tuple of frames (never written by PyTorch, but harmless).
    const TupleObj& t = tuples_[v.ref];
    RETURN_IF_ERROR(Charge(at, t.count));
    frame_scratch_.clear();
    for (uint32_t k = 0; k < t.count; ++k) {
      const Value& item = tuple_items_[t.begin + k];
      if (item.tag == Tag::kFrameRef) {
        frame_scratch_.push_back(FrameId(item.ref));
        continue;
      }
      if (item.tag != Tag::kDict || dicts_[item.ref].kind != Rec::kFrame) {
        return Error(at,
                     absl::StrCat(Sv(RecName(what)), " key 'frames': item ", k, " is not a frame"));
      }
      frame_scratch_.push_back(FrameId(dicts_[item.ref].record));
    }
    return snap_.stacks.Intern(frame_scratch_);
  }
  if (v.tag != Tag::kList) return TypeError(at, what, Key::kFrames, v, "list");
  ListObj& l = lists_[v.ref];
  if (l.stack.valid()) return l.stack;
  frame_scratch_.clear();
  uint32_t index = 0;
  for (uint32_t k = 0; k < l.count; ++k) {
    const Value& item = scratch_[l.begin + k];
    if (item.tag == Tag::kRun && item.kind == Rec::kFrame) {
      for (int64_t r = 0; r < item.i; ++r) {
        frame_scratch_.push_back(FrameId(item.ref + static_cast<uint32_t>(r)));
      }
      index += static_cast<uint32_t>(item.i);
    } else if (item.tag == Tag::kStr) {
      // 2.0-era `cpp_frames`-like strings inside frames are not frames; skip them.
      ++index;
    } else {
      return Error(at, absl::StrCat(Sv(RecName(what)), " key 'frames': item ", index, " is a ",
                                    item.tag == Tag::kRun ? RecName(item.kind) : TagName(item.tag),
                                    ", not a frame"));
    }
  }
  l.stack = snap_.stacks.Intern(frame_scratch_);
  l.consumed = true;
  if (l.begin + l.count == scratch_.size()) scratch_.resize(l.begin);
  l.count = 0;
  return l.stack;
}

absl::StatusOr<PoolId> Decoder::AsPool(size_t at, Rec what, Key key, const Value& v) {
  const Value* items = nullptr;
  uint32_t n = 0;
  if (v.tag == Tag::kTuple) {
    items = tuple_items_.data() + tuples_[v.ref].begin;
    n = tuples_[v.ref].count;
  } else if (v.tag == Tag::kList) {
    items = scratch_.data() + lists_[v.ref].begin;
    n = lists_[v.ref].count;
  } else if (v.tag == Tag::kNone) {
    return PoolId{};
  }
  if (items == nullptr || n != 2) return TypeError(at, what, key, v, "a pair of ints");
  PoolId p;
  ASSIGN_OR_RETURN(uint64_t a, AsAddress(at, what, key, items[0]));
  ASSIGN_OR_RETURN(uint64_t b, AsAddress(at, what, key, items[1]));
  p.first = a;
  p.second = b;
  return p;
}

absl::StatusOr<std::pair<uint32_t, uint32_t>> Decoder::AsRecordRange(size_t at,
                                                                     std::string_view what,
                                                                     Rec kind, const Value& v) {
  if (v.tag != Tag::kList) {
    return Error(at, absl::StrCat(Sv(what), ": expected a list of ", Sv(RecName(kind)), "s, got ",
                                  TagName(v.tag)));
  }
  ListObj& l = lists_[v.ref];
  l.consumed = true;
  if (l.count == 0) return std::pair<uint32_t, uint32_t>{0, 0};
  uint64_t index = 0;  // records of the list; runs shared through the memo may add up past 32 bits
  for (uint32_t k = 0; k < l.count; ++k) {
    const Value& item = scratch_[l.begin + k];
    if (item.tag != Tag::kRun || item.kind != kind) {
      return Error(at, absl::StrCat(Sv(what), ": item ", index, " is a ",
                                    item.tag == Tag::kRun    ? RecName(item.kind)
                                    : item.tag == Tag::kDict ? RecName(dicts_[item.ref].kind)
                                                             : TagName(item.tag),
                                    ", not a ", RecName(kind)));
    }
    index += static_cast<uint64_t>(item.i);
  }
  RETURN_IF_ERROR(Narrow(at, index, absl::StrCat(Sv(what), ": records")).status());
  const Value& first = scratch_[l.begin];
  if (l.count == 1) return std::pair<uint32_t, uint32_t>{first.ref, static_cast<uint32_t>(first.i)};
  // Several runs (records shared or out of order): copy them into one new contiguous range.
  RETURN_IF_ERROR(Charge(at, index));
  RETURN_IF_ERROR(CheckBudget(at, uint64_t{index} * sizeof(TraceEvent)));
  // The copy is appended after what the vector holds: its end must fit 32 bits too.
  size_t held = 0;
  switch (kind) {
    case Rec::kBlock:
      held = blocks_.size();
      break;
    case Rec::kSegment:
      held = segments_.size();
      break;
    case Rec::kHistory:
      held = history_.size();
      break;
    case Rec::kAnnotation:
      held = annotations_.size();
      break;
    default:
      held = snap_.events.size();
  }
  RETURN_IF_ERROR(Narrow(at, held + index, absl::StrCat(Sv(what), ": records")).status());
  auto copy_range = [&](auto& vec) -> std::pair<uint32_t, uint32_t> {
    uint32_t begin = static_cast<uint32_t>(vec.size());
    for (uint32_t k = 0; k < l.count; ++k) {
      const Value& item = scratch_[l.begin + k];
      for (int64_t r = 0; r < item.i; ++r) vec.push_back(vec[item.ref + r]);
    }
    return {begin, static_cast<uint32_t>(vec.size()) - begin};
  };
  switch (kind) {
    case Rec::kBlock:
      return copy_range(blocks_);
    case Rec::kSegment:
      return copy_range(segments_);
    case Rec::kHistory:
      return copy_range(history_);
    case Rec::kAnnotation:
      return copy_range(annotations_);
    case Rec::kEvent: {
      uint32_t begin = static_cast<uint32_t>(snap_.events.size());
      for (uint32_t k = 0; k < l.count; ++k) {
        const Value& item = scratch_[l.begin + k];
        for (int64_t r = 0; r < item.i; ++r) {
          uint32_t src = item.ref + static_cast<uint32_t>(r);
          snap_.events.push_back(snap_.events[src]);
          EventAppended();
          if (const EventExtra* x = FindExtra(src)) {
            EventExtra copy = *x;
            copy.event = static_cast<uint32_t>(snap_.events.size() - 1);
            extras_.push_back(copy);  // stays sorted: the copy's index is the largest so far
          }
        }
      }
      return std::pair<uint32_t, uint32_t>{begin,
                                           static_cast<uint32_t>(snap_.events.size()) - begin};
    }
    default:
      return Error(at, absl::StrCat(Sv(what), ": unexpected list of ", Sv(RecName(kind))));
  }
}

std::string Decoder::RenderText(const Value& v, int depth) const {
  if (depth > 16) return "...";
  switch (v.tag) {
    case Tag::kNone:
      return "None";
    case Tag::kBool:
      return v.i ? "True" : "False";
    case Tag::kInt:
    case Tag::kHugeInt:
      return absl::StrCat(v.i);
    case Tag::kUInt64:
      return absl::StrCat(static_cast<uint64_t>(v.i));
    case Tag::kFloat: {
      double d;
      std::memcpy(&d, &v.i, sizeof d);
      return absl::StrCat(d);
    }
    case Tag::kStr:
      return std::string(snap_.strings.Get(StrId(v.ref)));
    case Tag::kEventRef:
    case Tag::kFrameRef:
      return absl::StrCat("<", RecName(DictKind(v)), ">");
    case Tag::kDict: {
      const DictObj& d = dicts_[v.ref];
      if (d.kind != Rec::kGeneric) return absl::StrCat("<", RecName(d.kind), ">");
      std::string out = "{";
      bool first = true;
      for (const auto& [k, val] : generic_[d.record].items) {
        absl::StrAppend(&out, first ? "" : ", ", RenderText(k, depth + 1), ": ",
                        RenderText(val, depth + 1));
        first = false;
        // Bounded output bounds the work too: a dict whose values are the same big dict (memo
        // GETs), 16 levels deep, would otherwise render 4096^16 items.
        if (out.size() > kMaxRenderedChars) {
          out += ", ...";
          break;
        }
      }
      return out + "}";
    }
    default:
      return absl::StrCat("<", TagName(v.tag), ">");
  }
}

}  // namespace memsnap::parse::pickle
