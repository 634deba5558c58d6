# gec_tiny.bash: sourced by tests/app/gec_cli.sh and tests/e2e/gec_e2e.sh.
# gec_tiny_model MTPE DIR: trains in a few seconds a tiny GEC transformer
# (dim 32, 1+1 layers, its own 48-piece SentencePiece vocabulary) on a
# synthetic corpus of 175 lines: 125 clean German sentences "SUBJECT VERB
# ADVERB." copied to themselves, and the 50 of them with "Datei" also
# written "Dateii" -> the sentence with "Datei".  300 updates, seed 1.
# DIR then holds model.npz and vocab.spm (what `mtpe gec -m DIR` and
# `mtpe edit --gec DIR` read).  Returns mtpe train's exit code.
gec_tiny_model() {
    local mtpe=$1 dir=$2 s v a c n
    mkdir -p "$dir"
    for s in "Die Datei" "Der Ordner" "Das Fenster" "Die Liste" "Die Datei"; do
        for v in "wurde gespeichert" "ist leer" "fehlt" "wird geladen" "wurde gelöscht"; do
            for a in jetzt heute nicht schon wieder; do
                c="$s $v $a."
                printf '%s\t%s\n' "$c" "$c"
                n=${c//Datei/Dateii}
                [ "$n" != "$c" ] && printf '%s\t%s\n' "$n" "$c"
            done
        done
    done > "$dir/pairs.tsv"
    cut -f1 "$dir/pairs.tsv" > "$dir/train.noisy"
    cut -f2 "$dir/pairs.tsv" > "$dir/train.clean"
    "$mtpe" train -m "$dir/model.npz" -t "$dir/train.noisy" "$dir/train.clean" \
        -v "$dir/vocab.spm" "$dir/vocab.spm" --dim-vocabs 48 48 \
        --dim-emb 32 --enc-depth 1 --dec-depth 1 --transformer-heads 2 \
        --transformer-dim-ffn 64 --tied-embeddings-all --mini-batch 32 \
        --learn-rate 0.01 --lr-warmup 20 --after-batches 300 --disp-freq 100 \
        --seed 1 --cpu-threads 1 --quiet --log "$dir/train.log"
}
