"""Every published number the notebooks compare against, each with its source.

Published numbers, never results of this code. Copied from ``shared/papers/reference_numbers.md``
and checked against the papers' text: Clark et al. 2019, *What Does BERT Look At?* and
Kovaleva et al. 2019, *Revealing the Dark Secrets of BERT*, both on BERT-base uncased
(12 layers x 12 heads). Heads are ``"layer-head"``, 1-based, as printed in the papers.
"""

from __future__ import annotations

#: Both papers: BERT-base has 12 layers (of 12 heads each).
BERT_BASE_LAYERS = 12

# --- Clark et al. 2019 -----------------------------------------------------------------------

#: Clark et al., Section 3 (surface patterns; 1,000 Wikipedia segments of <= 128 tokens), the
#: claims as the paper words them: Sections 3.1-3.3, Figures 2-4.
CLARK_SECTION3 = {
    "previous": "4 heads (layers 2, 4, 7, 8)",  # Section 3.1
    "next": "5 heads (layers 1, 2, 2, 3, 6)",  # Section 3.1
    "sep_share": "> 50% in layers 6-10",  # Section 3.2, Figure 2
    "sep_to_sep": "> 90% for some heads",  # Section 3.2, Figure 2
    "layer_order": "early [CLS], middle [SEP], deep ./,",  # Figure 2 caption
    "sep_gradient": "very small from layer 5",  # Section 3.2, Figure 3
    "broad_layer1": "high-entropy heads, <= ~10% on any word",  # Section 3.3, Figure 4
    "cls_entropy_last": "3.89 nats",  # Section 3.3
    "split_words": "about 8%",  # Section 4.1 ("~8% in our data")
}

#: Clark et al., Table 1 (PTB WSJ, Stanford Dependencies): SD relation -> (best head, accuracy
#: %, best fixed-offset baseline %, its offset, best direction). Directions: Section 4.2 says
#: dependent -> head is best for every relation except pobj.
CLARK_TABLE1 = {
    "All": ("7-6", 34.5, 26.3, 1, "dep2head"),
    "prep": ("7-4", 66.7, 61.8, -1, "dep2head"),
    "pobj": ("9-6", 76.3, 34.6, -2, "head2dep"),
    "det": ("8-11", 94.3, 51.7, 1, "dep2head"),
    "nn": ("4-10", 70.4, 70.2, 1, "dep2head"),
    "nsubj": ("8-2", 58.5, 45.5, 1, "dep2head"),
    "amod": ("4-10", 75.6, 68.3, 1, "dep2head"),
    "dobj": ("8-10", 86.8, 40.0, -2, "dep2head"),
    "advmod": ("7-6", 48.8, 40.2, 1, "dep2head"),
    "aux": ("4-10", 81.1, 71.5, 1, "dep2head"),
    "poss": ("7-6", 80.5, 47.7, 1, "dep2head"),
    "auxpass": ("4-10", 82.5, 40.5, 1, "dep2head"),
    "ccomp": ("8-1", 48.8, 12.4, -2, "dep2head"),
    "mark": ("8-2", 50.7, 14.5, 2, "dep2head"),
    "prt": ("6-7", 99.1, 91.4, -1, "dep2head"),
}

#: The authors' released notebook (its stored run), where it differs from Table 1: SD relation
#: -> (accuracy %, baseline %). The paper's auxpass row looks like a slip (reference_numbers.md).
CLARK_TABLE1_AUTHORS_NOTEBOOK = {"auxpass": (94.1, 82.5), "All": (34.7, 26.7)}

#: Clark et al., Table 2 (CoNLL-2012, documents truncated to 128 tokens): system -> accuracy %
#: (All, Pronoun, Proper, Nominal). "neural" is only roughly comparable (full documents,
#: other mention detection); None: not reported.
CLARK_TABLE2 = {
    "nearest": (27, 29, 29, 19),
    "head_match": (52, 47, 67, 40),
    "rule_based": (69, 70, 77, 60),
    "neural": (83, None, None, None),
    "head 5-4": (65, 64, 73, 58),
}

#: Clark et al., Table 3 (PTB WSJ dev, Stanford Dependencies): probe -> UAS. The paper's
#: Attention + GloVe has no bias term. (Its structural-probe row, 80 UUAS, is a different task.)
CLARK_TABLE3 = {
    "Right-branching": 26,
    "Distances + GloVe": 58,
    "Random-init attention + GloVe": 30,
    "Attention only": 61,
    "Attention + GloVe": 77,
}

#: Clark et al., Figure 6 and Section 6 (head clustering), as the paper words it.
CLARK_FIGURE6 = {"same_layer_closer": "yes (Figure 6, qualitative)"}

# --- a public reproduction on UD English EWT (reference_numbers.md) --------------------------

#: A public PyTorch reproduction on UD English EWT dev with bert-base-uncased: probe -> UAS
#: (the rows of Clark's Table 3 it reports). Its right-branching number is quoted in
#: reference_numbers.md with the single-head results of Table 1.
EWT_REPRODUCTION_TABLE3 = {
    "Right-branching": 32.1,
    "Attention only": 61.4,
    "Attention + GloVe": 74.7,
}

# --- Kovaleva et al. 2019 --------------------------------------------------------------------

#: Kovaleva et al., Section 4.1 (attention-map types) and Figure 2, as the paper words them.
KOVALEVA_SECTION41 = {
    "labelled_maps": "about 400",
    "vertical_share": "30%",
    "classifier_f1": "0.86 (8-conv CNN)",  # "8 convolutional layers", F1 average not stated
    "heterogeneous_share": "32% (MRPC) to 61% (QQP)",  # Figure 2, upper bound over tasks
    "maps_of": "fine-tuned BERT-base, one model per task",  # "the corresponding fine-tuned"
}

#: Kovaleva et al., Section 3 (Data): the GLUE tasks they fine-tuned on and classified maps of
#: (CoLA and WNLI excluded).
KOVALEVA_TASKS = ("MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI")

#: Kovaleva et al., Section 4.1 and Figure 2: the share of Heterogeneous maps across tasks, as
#: numbers (task, share).
KOVALEVA_HETEROGENEOUS_RANGE = {"low": ("MRPC", 0.32), "high": ("QQP", 0.61)}

#: Kovaleva et al., Table 1 (dev sets, BERT-base): task -> column -> {metric: value x100}.
#: Columns: ``"pretrained"`` (pre-trained, no fine-tuning), ``"random_finetuned"`` (random
#: init + fine-tuning), ``"finetuned"`` (pre-trained + fine-tuning). MRPC and QQP: F1 and
#: accuracy; STS-B: the paper does not name the correlation (Pearson, by the GLUE recipe).
KOVALEVA_TABLE1 = {
    "MRPC": {"pretrained": {"f1": 0.0, "accuracy": 31.6},
             "random_finetuned": {"f1": 81.2, "accuracy": 68.3},
             "finetuned": {"f1": 87.9, "accuracy": 82.3}},
    "STS-B": {"pretrained": {"pearson": 33.1}, "random_finetuned": {"pearson": 2.9},
              "finetuned": {"pearson": 82.7}},
    "SST-2": {"pretrained": {"accuracy": 49.1}, "random_finetuned": {"accuracy": 80.5},
              "finetuned": {"accuracy": 92.0}},
    "QQP": {"pretrained": {"f1": 0.0, "accuracy": 60.9},
            "random_finetuned": {"f1": 0.0, "accuracy": 63.2},
            "finetuned": {"f1": 65.2, "accuracy": 78.6}},
    "RTE": {"pretrained": {"accuracy": 52.7}, "random_finetuned": {"accuracy": 52.7},
            "finetuned": {"accuracy": 64.6}},
    "QNLI": {"pretrained": {"accuracy": 52.8}, "random_finetuned": {"accuracy": 49.5},
             "finetuned": {"accuracy": 84.4}},
    "MNLI": {"pretrained": {"accuracy": 31.7}, "random_finetuned": {"accuracy": 61.0},
             "finetuned": {"accuracy": 78.6}},  # MNLI-m
}

#: Kovaleva et al., Sections 4.2-4.5, as the paper words them.
KOVALEVA_SECTIONS42_45 = {
    "framenet_sentences": 473,  # Section 4.2
    "framenet_standout": "2 of 144 heads, average max weight about 0.20",  # Figure 3
    "drift_layers": "the last two layers change most, every task but QQP",  # Section 4.3, Fig 5
    "cls_sep_stripes": "vertical stripes are [CLS] and [SEP]; early layers [CLS], later [SEP]",
    "last_layer_cls": "last-layer [CLS] attends most to [SEP], except STS-B, RTE, QNLI "
                      "(punctuation)",  # Section 4.5, Figure 7
}

# --- k06: Kovaleva et al. Sections 4.3-4.5 as the ledger tests them ---------------------------
#: Section 4.3: "fine-tuned BERT outperforms pre-trained BERT by a significant margin on all the
#: tasks (with an average of 35.9 points of absolute difference)".
KOVALEVA_FINETUNE_GAIN_MEAN = 35.9
#: Section 4.3: the tasks where random init + fine-tuning scores below the pre-trained model
#: without fine-tuning ("for some tasks (STS-B and QNLI)").
KOVALEVA_RANDOM_BELOW_PRETRAINED = ("STS-B", "QNLI")
#: Section 4.3, Figure 5: the task excepted from "the last two layers change most".
KOVALEVA_DRIFT_EXCEPTION = ("QQP",)
#: Section 4.4: features whose attention rose with fine-tuning, and on which tasks ("nouns and
#: direct objects of the main predicates (on the MRPC, RTE and QQP tasks), and negation tokens
#: (on the QNLI task)").
KOVALEVA_FEATURE_INCREASE = {"noun": ("MRPC", "RTE", "QQP"), "object": ("MRPC", "RTE", "QQP"),
                             "negation": ("QNLI",)}
#: Section 4.5, Figure 7: the type the last layer's [CLS] attends to most, per task ("[SEP]"
#: except STS-B, RTE and QNLI: "punctuation").
KOVALEVA_CLS_TARGET = {"MRPC": "sep", "STS-B": "punct", "SST-2": "sep", "QQP": "sep",
                       "RTE": "punct", "QNLI": "punct", "MNLI": "sep"}
#: Section 4.4: the single-sentence task whose [SEP] weights are the largest ("SST-2 ... only
#: one [SEP] token instead of two").
KOVALEVA_SINGLE_SEP_TASK = "SST-2"

#: Kovaleva et al., Section 4.6 (Figures 8-9): disabling heads and layers.
KOVALEVA_SECTION46 = {
    "best_head_gain": {"STS-B": 0.1, "MRPC": 1.2},  # points; the range over tasks
    "random_head_helps": ("MRPC", "RTE"),  # mean change over heads > 0
    "layer1_rte_gain": 3.2,  # points, disabling layer 1 on RTE
    "layer_cost_max": 0.2,  # points, the largest drop from disabling a layer (QNLI, MNLI)
    "note": "the disabling figures' baselines do not match the paper's own Table 1",
}

# --- c01: Clark et al. Section 3 as numbers (issue 33) ---------------------------------------

#: The numbers behind :data:`CLARK_SECTION3`'s wording, for the ledger's tests (notebook 01):
#: thresholds the paper states ("> 50%", "more than 90%", "at most 10%"), its value (3.89
#: nats) and its BERT-base layer ranges (1-based, of 12).
CLARK_SECTION3_NUMBERS = {
    "positional_share": 0.5,  # 3.1: heads that "put >50% of their attention on" prev/next
    "previous_heads": (2, 4, 7, 8),  # 3.1: the layers of the four previous-token heads
    "next_heads": (1, 2, 2, 3, 6),  # 3.1: the layers of the five next-token heads
    "sep_share": 0.5,  # 3.2: "over half of BERT's attention in layers 6-10"
    "sep_layers": (6, 10),
    "sep_to_sep": 0.9,  # 3.2: "more than 90%" from [SEP] to the [SEP] tokens
    "half_to_special": 0.5,  # Figure 2: "more than half of a head's total attention"
    "gradient_from_layer": 5,  # 3.2: "Starting in layer 5"
    "broad_max_weight": 0.10,  # 3.3: "at most 10% of their attention mass on any single word"
    "cls_entropy_last": 3.89,  # 3.3: nats, the last layer's entropy from [CLS]
}
