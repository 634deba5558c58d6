/*
** spm_wrap.cpp: the C face of libsentencepiece for vocab.c (DESIGN.md section 7).
**
** Every extern "C" function catches all C++ exceptions and turns them into an
** mt_status with a message; nothing here throws across the C boundary.  The wrapper
** object itself lives in mt_try_malloc memory (placement new), so allocation-failure
** tests reach it; sentencepiece's own internals allocate with operator new.
**
** File read here: a SentencePiece model (Marian names it *.spm; sentencepiece writes
** *.model).  It is a serialized protobuf ModelProto, parsed by libsentencepiece:
**
**   FIELD  TYPE                  DESCRIPTION
**     1    repeated SentencePiece pieces, in id order: piece (1, string), score
**                                (2, float), type (3, enum: NORMAL, UNKNOWN, CONTROL,
**                                USER_DEFINED, BYTE, UNUSED)
**     2    TrainerSpec           training options; Marian's vocabularies hold input
**                                (1), model_prefix (2), vocab_size (4),
**                                input_sentence_size (11), max_sentence_length (18),
**                                unk_id (40) = 1, bos_id (41) = -1, eos_id (42) = 0
**     3    NormalizerSpec        name (1) "nmt_nfkc" and the precompiled charmap (2)
**     5    NormalizerSpec        denormalizer (optional)
**
** Training follows Marian's SentencePieceVocab::create (src/data/sentencepiece_vocab.cpp)
** step by step; see mt_vocab_train_spm in vocab.h for the options it passes.
*/
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "mt.h"
#include "vocab.h"

// Exported by libsentencepiece (common.h is not installed): the level below which
// its LOG() lines are dropped (0 INFO, 1 WARNING, 2 ERROR, 3 FATAL).
namespace sentencepiece {
namespace logging {
int GetMinLogLevel();
void SetMinLogLevel(int v);
} // namespace logging
} // namespace sentencepiece

struct mt_spm {
    sentencepiece::SentencePieceProcessor proc;
};

namespace {

// Marian: maxBytes in SentencePieceVocab::create; lines of this size or more are skipped.
const size_t kMaxSentenceBytes = 2048;

mt_status from_exception(const char *what_doing) {
    try {
        throw;
    } catch (const std::bad_alloc &) {
        return mt_seterr(MT_ERR_NOMEM, "sentencepiece: out of memory while %s", what_doing);
    } catch (const std::exception &e) {
        return mt_seterr(MT_ERR_FORMAT, "sentencepiece: %s while %s", e.what(), what_doing);
    } catch (...) {
        return mt_seterr(MT_ERR_FORMAT, "sentencepiece: unknown exception while %s", what_doing);
    }
}

bool ends_with(const std::string &s, const char *suffix) {
    size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Feeds the in-memory sample to the trainer.  Marian writes the sample to a temporary
// file and passes --input=FILE; sentencepiece reads that file back line by line, so the
// trainer sees the same strings either way.
class SampleIterator : public sentencepiece::SentenceIterator {
  public:
    explicit SampleIterator(const std::vector<std::string> &lines) : lines_(lines) {}
    bool done() const override { return pos_ >= lines_.size(); }
    void Next() override { ++pos_; }
    const std::string &value() const override { return lines_[pos_]; }
    sentencepiece::util::Status status() const override { return {}; }

  private:
    const std::vector<std::string> &lines_;
    size_t pos_ = 0;
};

// Marian: reservoirSampling / reservoirSamplingAll / dumpAll.  The generator and the
// distribution are the same standard-library types Marian uses, so with the same seed
// and the same C++ standard library the sample is the same.
struct Sampler {
    std::mt19937 gen;
    std::uniform_int_distribution<int> rand_int; // 0 .. INT_MAX
    std::vector<std::string> sample;
    size_t seen = 0;

    explicit Sampler(uint32_t seed) : gen(seed) {}

    mt_status add_file(const std::string &path, size_t max_lines) {
        if (ends_with(path, ".gz"))
            return mt_seterr(MT_ERR_UNSUPPORTED,
                             "cannot train SentencePiece from '%s': gzipped corpora are not "
                             "supported, decompress it first",
                             path.c_str());
        std::ifstream in(path, std::ios::binary);
        if (!in)
            return mt_seterr(MT_ERR_IO, "cannot open training corpus '%s': %s", path.c_str(),
                             std::strerror(errno));
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty() || line.size() >= kMaxSentenceBytes) continue;
            if (max_lines == 0 || sample.size() < max_lines) {
                sample.push_back(line);
            } else {
                size_t i = (size_t)rand_int(gen) % (seen + 1);
                if (i < max_lines) sample[i] = line;
            }
            seen++;
        }
        if (in.bad())
            return mt_seterr(MT_ERR_IO, "error reading training corpus '%s'", path.c_str());
        return MT_OK;
    }
};

// Marian concatenates its own flags and --sentencepiece-options into one string that
// sentencepiece splits on spaces into key/value pairs; the first occurrence of a key
// wins (std::unordered_map::emplace), so user options cannot override Marian's.
mt_status parse_options(const char *opts, std::unordered_map<std::string, std::string> *kw) {
    std::string s(opts ? opts : "");
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
            i++;
        size_t j = i;
        while (j < s.size() && s[j] != ' ' && s[j] != '\t')
            j++;
        if (j == i) break;
        std::string arg = s.substr(i, j - i);
        i = j;
        if (arg.compare(0, 2, "--") == 0) arg.erase(0, 2);
        if (arg.empty()) continue;
        size_t eq = arg.find('=');
        std::string key = eq == std::string::npos ? arg : arg.substr(0, eq);
        std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
        kw->emplace(key, value);
    }
    return MT_OK;
}

} // namespace

// libsentencepiece trusts the character map of a model's NormalizerSpec
// (field 2 of fields 3 and 5 of the ModelProto): uint32 trie size, a
// Darts-clone double array of that many bytes, then NUL-terminated
// replacement strings that the trie's values point into.  A damaged map
// makes Normalize() read outside it (found by tests/fuzz/fuzz_vocab_spm:
// strlen past the end of the strings).  So before sentencepiece sees a
// file, each map is checked: every value unit (top bit set) points inside
// the strings, the strings end in NUL, and every node's children (its
// offset XOR any byte) lie inside the array.  A protobuf this reader
// cannot walk is left to sentencepiece, which refuses it.
namespace {
bool pb_varint(const unsigned char *&p, const unsigned char *end, uint64_t &v) {
    v = 0;
    for (int shift = 0; p < end && shift < 64; shift += 7) {
        unsigned char c = *p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (c < 0x80) return true;
    }
    return false;
}

// Calls fn(field, data, size) for each length-delimited field of a message;
// false when the message cannot be walked.
template <class F> bool pb_fields(const unsigned char *p, size_t n, F fn) {
    const unsigned char *end = p + n;
    while (p < end) {
        uint64_t key, v;
        if (!pb_varint(p, end, key)) return false;
        switch (key & 7) {
        case 0:
            if (!pb_varint(p, end, v)) return false;
            break;
        case 1:
            if (end - p < 8) return false;
            p += 8;
            break;
        case 5:
            if (end - p < 4) return false;
            p += 4;
            break;
        case 2:
            if (!pb_varint(p, end, v) || v > (uint64_t)(end - p)) return false;
            if (!fn(key >> 3, p, (size_t)v)) return false;
            p += v;
            break;
        default: return false;
        }
    }
    return true;
}

bool charsmap_ok(const unsigned char *b, size_t n) {
    if (n == 0) return true; // no map: identity
    if (n < 4) return false;
    uint32_t trie =
        (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    if (trie % 4 != 0 || trie > n - 4) return false;
    size_t units = trie / 4, strings = n - 4 - trie;
    const unsigned char *u = b + 4, *str = b + 4 + trie;
    if (strings > 0 && str[strings - 1] != '\0') return false;
    for (size_t pos = 0; pos < units; pos++) {
        uint32_t x = (uint32_t)u[4 * pos] | (uint32_t)u[4 * pos + 1] << 8 |
                     (uint32_t)u[4 * pos + 2] << 16 | (uint32_t)u[4 * pos + 3] << 24;
        if (x >> 31) { // a value: an offset into the strings
            if ((x & 0x7fffffffu) >= strings) return false;
            continue;
        }
        size_t off = (size_t)(x >> 10) << ((x & (1u << 9)) >> 6);
        if (((pos ^ off) | 0xff) >= units) return false;
    }
    return true;
}

// False only for a model whose protobuf walks and holds a damaged map.
bool model_maps_ok(const std::string &bytes) {
    bool ok = true;
    pb_fields((const unsigned char *)bytes.data(), bytes.size(),
              [&](uint64_t field, const unsigned char *p, size_t n) {
                  if (field != 3 && field != 5) return true; // normalizer, denormalizer
                  pb_fields(p, n, [&](uint64_t f, const unsigned char *q, size_t m) {
                      if (f == 2 && !charsmap_ok(q, m)) ok = false;
                      return true;
                  });
                  return true;
              });
    return ok;
}
} // namespace

extern "C" {

mt_status mt_spm_load(const char *path, mt_spm **out) {
    MT_ASSERT(path != NULL && out != NULL);
    void *mem = mt_try_malloc(sizeof(mt_spm));
    if (mem == NULL)
        return mt_seterr(MT_ERR_NOMEM, "out of memory loading SentencePiece model '%s'", path);
    mt_spm *s = NULL;
    try {
        s = new (mem) mt_spm();
        std::ifstream in(path, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (in && !model_maps_ok(bytes)) {
            s->~mt_spm();
            mt_free(mem);
            return mt_seterr(MT_ERR_FORMAT,
                             "SentencePiece model '%s' is damaged: its normalizer's character "
                             "map points outside itself",
                             path);
        }
        sentencepiece::util::Status st = s->proc.Load(path);
        if (!st.ok()) {
            mt_status rc = st.code() == sentencepiece::util::StatusCode::kNotFound ||
                                   st.code() == sentencepiece::util::StatusCode::kPermissionDenied
                               ? MT_ERR_IO
                               : MT_ERR_FORMAT;
            s->~mt_spm();
            mt_free(mem);
            return mt_seterr(rc, "cannot load SentencePiece model '%s': %s", path,
                             st.ToString().c_str());
        }
        int eos = s->proc.eos_id(), unk = s->proc.unk_id();
        if (s->proc.GetPieceSize() <= 0 || eos < 0 || unk < 0) {
            s->~mt_spm();
            mt_free(mem);
            return mt_seterr(MT_ERR_FORMAT,
                             "SentencePiece model '%s' has no EOS or UNK piece (eos_id %d, "
                             "unk_id %d); Marian needs both",
                             path, eos, unk);
        }
    } catch (...) {
        if (s) s->~mt_spm();
        mt_free(mem);
        return from_exception("loading a model");
    }
    *out = s;
    return MT_OK;
}

void mt_spm_free(mt_spm *s) {
    if (s == NULL) return;
    s->~mt_spm();
    mt_free(s);
}

int32_t mt_spm_size(const mt_spm *s) { return (int32_t)s->proc.GetPieceSize(); }
int32_t mt_spm_eos_id(const mt_spm *s) { return (int32_t)s->proc.eos_id(); }
int32_t mt_spm_unk_id(const mt_spm *s) { return (int32_t)s->proc.unk_id(); }

int32_t mt_spm_piece_to_id(const mt_spm *s, const char *piece, size_t len) {
    try {
        return (int32_t)s->proc.PieceToId(std::string_view(piece, len));
    } catch (...) {
        return (int32_t)s->proc.unk_id();
    }
}

const char *mt_spm_id_to_piece(const mt_spm *s, int32_t id) {
    MT_ASSERT(id >= 0 && id < s->proc.GetPieceSize());
    return s->proc.IdToPiece(id).c_str();
}

mt_status mt_spm_encode(const mt_spm *s, const char *text, size_t len, int32_t **ids, int64_t *n) {
    try {
        std::vector<int> v;
        sentencepiece::util::Status st = s->proc.Encode(std::string_view(text, len), &v);
        if (!st.ok())
            return mt_seterr(MT_ERR_INVALID, "SentencePiece encoding failed: %s",
                             st.ToString().c_str());
        int32_t *buf = (int32_t *)mt_try_malloc((v.size() + 1) * sizeof(int32_t));
        if (buf == NULL)
            return mt_seterr(MT_ERR_NOMEM, "out of memory encoding a %zu-byte line", len);
        for (size_t i = 0; i < v.size(); i++)
            buf[i] = (int32_t)v[i];
        *ids = buf;
        *n = (int64_t)v.size();
        return MT_OK;
    } catch (...) {
        return from_exception("encoding");
    }
}

mt_status mt_spm_decode(const mt_spm *s, const int32_t *ids, int64_t n, char **text) {
    try {
        std::vector<int> v(ids, ids + n);
        std::string out;
        sentencepiece::util::Status st = s->proc.Decode(v, &out);
        if (!st.ok())
            return mt_seterr(MT_ERR_INVALID, "SentencePiece decoding failed: %s",
                             st.ToString().c_str());
        char *buf = (char *)mt_try_malloc(out.size() + 1);
        if (buf == NULL)
            return mt_seterr(MT_ERR_NOMEM, "out of memory decoding %lld ids", (long long)n);
        std::memcpy(buf, out.data(), out.size());
        buf[out.size()] = '\0';
        *text = buf;
        return MT_OK;
    } catch (...) {
        return from_exception("decoding");
    }
}

mt_status mt_spm_train(const char *const *corpora, int n_corpora, const char *model_path,
                       const mt_spm_train_params *p) {
    int old_level = -1;
    try {
        const int32_t vocab_size = p->vocab_size > 0 ? p->vocab_size : 32000;
        Sampler sampler(p->seed);
        for (int i = 0; i < n_corpora; i++) {
            mt_status rc = sampler.add_file(corpora[i], (size_t)p->max_lines);
            if (rc != MT_OK) return rc;
        }
        if (p->max_lines > 0)
            std::shuffle(sampler.sample.begin(), sampler.sample.end(), sampler.gen);
        if (sampler.sample.empty())
            return mt_seterr(MT_ERR_INVALID,
                             "no usable training lines for SentencePiece model '%s' (lines "
                             "must be non-empty and shorter than %zu bytes)",
                             model_path, kMaxSentenceBytes);
        mt_log(MT_LOG_INFO, "[SentencePiece] selected %zu of %zu lines for '%s'",
               sampler.sample.size(), sampler.seen, model_path);

        // Marian's flags first (they win over duplicates in the user's options).
        std::unordered_map<std::string, std::string> kw;
        kw.emplace("bos_id", "-1");
        kw.emplace("eos_id", "0");
        kw.emplace("unk_id", "1");
        kw.emplace("input", "");
        kw.emplace("model_prefix", model_path);
        kw.emplace("vocab_size", std::to_string(vocab_size));
        kw.emplace("max_sentence_length", std::to_string(kMaxSentenceBytes));
        kw.emplace("input_sentence_size", std::to_string(sampler.seen));
        if (p->num_threads > 0) kw.emplace("num_threads", std::to_string(p->num_threads));
        mt_status rc = parse_options(p->options, &kw);
        if (rc != MT_OK) return rc;
        kw.erase("input"); // the sample comes from the iterator

        if (p->quiet) {
            old_level = sentencepiece::logging::GetMinLogLevel();
            sentencepiece::logging::SetMinLogLevel(3);
        }
        SampleIterator it(sampler.sample);
        sentencepiece::util::Status st = sentencepiece::SentencePieceTrainer::Train(kw, &it);
        if (old_level >= 0) sentencepiece::logging::SetMinLogLevel(old_level);
        old_level = -1;
        if (!st.ok())
            return mt_seterr(MT_ERR_FORMAT, "SentencePiece training of '%s' failed: %s", model_path,
                             st.ToString().c_str());

        std::string model = std::string(model_path) + ".model";
        std::string vocab = std::string(model_path) + ".vocab";
        if (std::remove(vocab.c_str()) != 0)
            mt_log(MT_LOG_WARN, "[SentencePiece] could not remove '%s'", vocab.c_str());
        if (std::rename(model.c_str(), model_path) != 0)
            return mt_seterr(MT_ERR_IO, "cannot rename '%s' to '%s': %s", model.c_str(), model_path,
                             std::strerror(errno));
        return MT_OK;
    } catch (...) {
        if (old_level >= 0) sentencepiece::logging::SetMinLogLevel(old_level);
        return from_exception("training");
    }
}

} // extern "C"
